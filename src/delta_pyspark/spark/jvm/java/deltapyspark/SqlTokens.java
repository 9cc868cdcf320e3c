package deltapyspark;

import java.util.Locale;
import org.antlr.v4.runtime.CharStreams;
import org.antlr.v4.runtime.Token;
import org.apache.spark.sql.catalyst.parser.SqlBaseLexer;
import org.apache.spark.sql.catalyst.parser.UpperCaseCharStream;

/**
 * A statement's tokens as Spark's own lexer reads them (the lexer of Spark's SQL grammar), for
 * the grammar of Delta's statements in the Python API layer: strings, quoted names, numbers,
 * comments and keywords are then read exactly as Spark reads them in any other statement.
 *
 * <p>Encoded as one line per token, {@code kind start end}, with {@code end} exclusive and
 * offsets in code points (Python's string indices); the kinds are {@code w} a name, {@code k}
 * one of Spark's keywords (names too, where the grammar allows), {@code i} a back-quoted name, {@code s} a string literal, {@code n}
 * a number, {@code p} punctuation and {@code x} a character Spark's lexer does not recognise.
 * Blanks and comments are left out.
 */
public final class SqlTokens {
  private SqlTokens() {}

  public static String encode(String sql) {
    SqlBaseLexer lexer =
        new SqlBaseLexer(new UpperCaseCharStream(CharStreams.fromString(sql)));
    lexer.removeErrorListeners();
    StringBuilder out = new StringBuilder();
    for (Token token = lexer.nextToken();
        token.getType() != Token.EOF;
        token = lexer.nextToken()) {
      if (token.getChannel() != Token.DEFAULT_CHANNEL) {
        continue; // blanks and comments
      }
      out.append(kind(token.getType()))
          .append(' ')
          .append(token.getStartIndex())
          .append(' ')
          .append(token.getStopIndex() + 1)
          .append('\n');
    }
    return out.toString();
  }

  /** The upper-cased first {@code n} words of {@code sql} (empty where there are fewer). */
  static String[] leadingWords(String sql, int n) {
    SqlBaseLexer lexer =
        new SqlBaseLexer(new UpperCaseCharStream(CharStreams.fromString(sql)));
    lexer.removeErrorListeners();
    String[] words = new String[n];
    java.util.Arrays.fill(words, "");
    int found = 0;
    for (Token token = lexer.nextToken();
        token.getType() != Token.EOF && found < n;
        token = lexer.nextToken()) {
      if (token.getChannel() != Token.DEFAULT_CHANNEL) {
        continue;
      }
      char kind = kind(token.getType());
      if (kind != 'w' && kind != 'k') {
        break;
      }
      words[found++] = token.getText().toUpperCase(Locale.ROOT);
    }
    return words;
  }

  private static char kind(int type) {
    if (type == SqlBaseLexer.IDENTIFIER) {
      return 'w';
    }
    if (type == SqlBaseLexer.BACKQUOTED_IDENTIFIER) {
      return 'i';
    }
    if (type == SqlBaseLexer.STRING_LITERAL || type == SqlBaseLexer.DOUBLEQUOTED_STRING) {
      return 's';
    }
    if (type == SqlBaseLexer.UNRECOGNIZED) {
      return 'x';
    }
    if (type >= SqlBaseLexer.BIGINT_LITERAL && type <= SqlBaseLexer.BIGDECIMAL_LITERAL) {
      return 'n'; // the grammar's number tokens: 2L, 2S, 2Y, 2, 2E3, 2.5, 2F, 2D, 2BD
    }
    if (type >= SqlBaseLexer.ADD && type <= SqlBaseLexer.ZONE) {
      return 'k'; // the grammar's keywords, ADD to ZONE (TEMP for TEMPORARY included)
    }
    return 'p';
  }
}
