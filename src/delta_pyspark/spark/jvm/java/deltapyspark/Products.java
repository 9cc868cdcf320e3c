package deltapyspark;

import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import scala.Product;

/**
 * Builds and copies Spark's case classes whose constructors grow between the Spark versions
 * the helper supports ({@code CatalogTable}, {@code InsertIntoStatement}, {@code UpdateAction},
 * ...): Spark appends parameters with defaults, so naming the fields we set and taking Scala's
 * defaults for the rest keeps one source for every version. Classes whose constructors have
 * not changed are called directly, where the compiler checks the call.
 */
final class Products {
  private Products() {}

  /**
   * A new {@code type} from its constructor's first parameters; the later ones take their
   * declared defaults (Scala's {@code $lessinit$greater$default$N} methods).
   */
  static Object create(Class type, Object[] leading) {
    Constructor constructor = widest(type.getConstructors());
    Object[] args = new Object[constructor.getParameterCount()];
    for (int i = 0; i < args.length; i++) {
      args[i] = i < leading.length ? leading[i] : call(type, "$lessinit$greater$default$" + (i + 1));
    }
    try {
      return constructor.newInstance(args);
    } catch (Exception e) {
      throw new IllegalStateException("cannot construct " + type.getName(), unwrapped(e));
    }
  }

  /** {@code product} with the named fields ({@code name, value, name, value, ...}) changed. */
  static Object with(Object product, Object[] changes) {
    Product fields = (Product) product;
    Object[] args = new Object[fields.productArity()];
    for (int i = 0; i < args.length; i++) {
      args[i] = fields.productElement(i);
    }
    for (int c = 0; c < changes.length; c += 2) {
      args[index(fields, (String) changes[c])] = changes[c + 1];
    }
    Method copy = null;
    Method[] methods = product.getClass().getMethods();
    for (int i = 0; i < methods.length; i++) {
      if (methods[i].getName().equals("copy") && methods[i].getParameterCount() == args.length) {
        copy = methods[i];
      }
    }
    if (copy == null) {
      throw new IllegalStateException("no copy of " + product.getClass().getName());
    }
    try {
      return copy.invoke(product, args);
    } catch (Exception e) {
      throw new IllegalStateException("cannot copy " + product.getClass().getName(), unwrapped(e));
    }
  }

  private static int index(Product fields, String name) {
    for (int i = 0; i < fields.productArity(); i++) {
      if (fields.productElementName(i).equals(name)) {
        return i;
      }
    }
    throw new IllegalArgumentException(fields.productPrefix() + " has no field " + name);
  }

  private static Constructor widest(Constructor[] constructors) {
    Constructor widest = constructors[0];
    for (int i = 1; i < constructors.length; i++) {
      if (constructors[i].getParameterCount() > widest.getParameterCount()) {
        widest = constructors[i];
      }
    }
    return widest;
  }

  private static Object call(Class type, String method) {
    try {
      return type.getMethod(method, new Class[0]).invoke(null, new Object[0]);
    } catch (Exception e) {
      throw new IllegalStateException(type.getName() + " has no default " + method, unwrapped(e));
    }
  }

  private static Throwable unwrapped(Exception e) {
    return e instanceof java.lang.reflect.InvocationTargetException ? e.getCause() : e;
  }
}
