package deltapyspark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.execution.command.CreateDataSourceTableCommand;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.collection.immutable.Seq;

/**
 * {@code CREATE TABLE t USING delta LOCATION p} over an existing Delta table: Spark's
 * registration, then the entry is given the log's columns and partitioning. Spark alone
 * stores an empty schema for a partitioned table, because the relation's data schema keeps the
 * partition columns in the log's order, so {@code SHOW COLUMNS} and {@code
 * spark.catalog.listColumns} would show nothing.
 */
public final class DeltaRegister extends LeafCommand {
  private final CreateDataSourceTableCommand create;

  public DeltaRegister(CreateDataSourceTableCommand create) {
    this.create = create;
  }

  public Seq run(SparkSession session) throws Exception {
    create.run(session);
    org.apache.spark.sql.catalyst.catalog.SessionCatalog catalog =
        session.sessionState().catalog();
    CatalogTable table = catalog.getTableMetadata(create.table().identifier());
    TableIdentifier ident = table.identifier();
    String answer =
        DeltaSource.tables()
            .open(
                table.location().toString(),
                "",
                session.sessionState().conf().sessionLocalTimeZone());
    if (answer.startsWith("E")) {
      throw DeltaSource.error(answer.substring(1));
    }
    String[] parts = answer.substring(1).split("\0", -1);
    StructType schema = (StructType) DataType.fromJson(parts[2]);
    StructType partitions = (StructType) DataType.fromJson(parts[3]);
    java.util.List fields = new java.util.ArrayList();
    StructField[] all = schema.fields();
    for (int i = 0; i < all.length; i++) {
      if (partitions.getFieldIndex(all[i].name()).isEmpty()) {
        fields.add(all[i]);
      }
    }
    String[] names = partitions.fieldNames();
    for (int i = 0; i < names.length; i++) {
      fields.add(partitions.apply(names[i]));
    }
    String database = (String) ident.database().get();
    DeltaWrites.refresh(
        session, database, ident.table(),
        org.apache.spark.sql.types.DataTypes.createStructType(fields).json(), names);
    if (catalog.getTableMetadata(ident).schema().isEmpty()) { // a catalog that keeps it
      catalog.externalCatalog().alterTableDataSchema(database, ident.table(), schema);
    }
    return scala.collection.immutable.Nil$.MODULE$;
  }

  public Seq output() {
    return scala.collection.immutable.Nil$.MODULE$;
  }

  public String simpleString(int maxFields) {
    return "DeltaRegister " + create.table().identifier();
  }

  public int productArity() {
    return 1;
  }

  public Object productElement(int n) {
    if (n == 0) {
      return create;
    }
    throw new IndexOutOfBoundsException(String.valueOf(n));
  }
}
