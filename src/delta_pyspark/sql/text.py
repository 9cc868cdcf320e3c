"""The text of Delta's SQL statements: a tokenizer aware of quotes, backticks and
parentheses, and the pieces the statements' grammars are built from.

Conditions, assignments and values are cut out of a statement as the user wrote them, so
Spark parses each expression as written (regenerating SQL from a parsed tree may change it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NoReturn

from delta_pyspark.exceptions import DeltaParseException

_TOKEN = re.compile(
    r"""
    (?P<space>\s+|--[^\n]*|/\*.*?\*/)
  | (?P<string>'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*")
  | (?P<ident>`(?:[^`]|``)*`)
  | (?P<number>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?[A-Za-z]*)
  | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<punct><=>|<=|>=|<>|!=|==|\|\||::|.)
    """,
    re.VERBOSE | re.DOTALL,
)


@dataclass(frozen=True)
class Token:
    kind: str  # string | ident | number | word | punct
    text: str
    start: int
    end: int

    def is_word(self, *words: str) -> bool:
        return self.kind == "word" and self.text.upper() in words


def tokenize(sql: str) -> list[Token]:
    out = []
    for m in _TOKEN.finditer(sql):
        kind = m.lastgroup or "punct"
        if kind != "space":
            out.append(Token(kind, m.group(), m.start(), m.end()))
    return out


def unquote(token: Token) -> str:
    if token.kind == "ident":
        return token.text[1:-1].replace("``", "`")
    if token.kind == "string":
        quote = token.text[0]
        body = token.text[1:-1].replace(quote * 2, quote)
        return re.sub(r"\\(.)", r"\1", body)
    return token.text


@dataclass(frozen=True)
class TableRef:
    """A table as the statement names it: ``delta.`path``` or a (multipart) name."""

    parts: tuple[str, ...]
    text: str  # as written, for messages

    @property
    def delta_path(self) -> str | None:
        if len(self.parts) == 2 and self.parts[0].lower() == "delta":
            return self.parts[1]
        return None


class StatementParser:
    """Recursive descent over the tokens of one statement, keeping the source text."""

    def __init__(self, sql: str) -> None:
        self.sql = sql
        self.tokens = tokenize(sql)
        self.pos = 0

    # -- looking
    def peek(self, offset: int = 0) -> Token | None:
        i = self.pos + offset
        return self.tokens[i] if i < len(self.tokens) else None

    def at(self, *words: str) -> bool:
        """Whether the next tokens are ``words`` (keywords, any case; punctuation as is)."""
        for offset, word in enumerate(words):
            token = self.peek(offset)
            if token is None:
                return False
            if not (token.is_word(word) or (token.kind == "punct" and token.text == word)):
                return False
        return True

    def accept(self, *words: str) -> bool:
        if self.at(*words):
            self.pos += len(words)
            return True
        return False

    def expect(self, *words: str, what: str | None = None) -> None:
        if not self.accept(*words):
            self.fail(what or " ".join(words))

    def done(self) -> bool:
        return self.pos >= len(self.tokens)

    def end(self) -> None:
        if self.accept(";") and self.done():
            return
        if not self.done():
            self.fail("the end of the statement")

    def fail(self, expected: str) -> NoReturn:
        token = self.peek()
        found = f"{token.text!r} at position {token.start}" if token else "the end"
        raise DeltaParseException(f"expected {expected}, found {found} in: {self.sql.strip()}")

    # -- pieces
    def table(self) -> TableRef:
        first = self.peek()
        if first is not None and first.kind == "string":  # VACUUM '/path', as delta-spark
            self.pos += 1
            return TableRef(("delta", unquote(first)), first.text)
        if first is None or first.kind not in ("word", "ident"):
            self.fail("a table name or delta.`path`")
        parts = [unquote(first)]
        self.pos += 1
        last = first
        while self.at(".") and (nxt := self.peek(1)) is not None and nxt.kind in ("word", "ident"):
            parts.append(unquote(nxt))
            last = nxt
            self.pos += 2
        return TableRef(tuple(parts), self.sql[first.start : last.end])

    def identifier(self, what: str) -> str:
        token = self.peek()
        if token is None or token.kind not in ("word", "ident"):
            self.fail(what)
        self.pos += 1
        return unquote(token)

    def integer(self, what: str) -> int:
        token = self.peek()
        if token is None or token.kind != "number" or not token.text.isdigit():
            self.fail(what)
        self.pos += 1
        return int(token.text)

    def literal(self, what: str) -> str:
        """A string or number literal's value."""
        token = self.peek()
        if token is None or token.kind not in ("string", "number"):
            self.fail(what)
        self.pos += 1
        return unquote(token)

    def alias(self, *stops: str) -> str | None:
        """``[AS] alias``, unless the next word is one of ``stops``."""
        if self.accept("AS"):
            return self.identifier("an alias after AS")
        token = self.peek()
        if token is not None and token.kind in ("word", "ident") and not token.is_word(*stops):
            self.pos += 1
            return unquote(token)
        return None

    def text_until(self, *stops: str, what: str) -> str:
        """The source text up to (not including) the first of the keywords ``stops`` outside
        parentheses and CASE ... END, or to the end; never empty."""
        start = self.pos
        depth = 0
        while not self.done():
            token = self.tokens[self.pos]
            if depth == 0 and (token.is_word(*stops) or (token.text == ";" and self._last())):
                break
            if token.text in ("(", "[") or token.is_word("CASE"):
                depth += 1
            elif token.text in (")", "]") or token.is_word("END"):
                depth -= 1
            self.pos += 1
        if self.pos == start:
            self.fail(what)
        return self.sql[self.tokens[start].start : self.tokens[self.pos - 1].end].strip()

    def _last(self) -> bool:
        return self.pos == len(self.tokens) - 1

    def group(self, what: str) -> str:
        """The text inside the parentheses that follow (moving past them)."""
        if not self.at("("):
            self.fail(what)
        open_token = self.tokens[self.pos]
        depth = 0
        while not self.done():
            token = self.tokens[self.pos]
            self.pos += 1
            if token.text == "(":
                depth += 1
            elif token.text == ")":
                depth -= 1
                if depth == 0:
                    return self.sql[open_token.end : token.start].strip()
        self.fail(f"')' closing {what}")


def split_top(text: str, separator: str = ",") -> list[str]:
    """``text`` split at ``separator`` tokens outside parentheses and brackets."""
    parts, depth, start = [], 0, 0
    for token in tokenize(text):
        if token.text in ("(", "["):
            depth += 1
        elif token.text in (")", "]"):
            depth -= 1
        elif depth == 0 and token.kind == "punct" and token.text == separator:
            parts.append(text[start : token.start].strip())
            start = token.end
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def parse_properties(text: str) -> dict[str, str]:
    """``'k' = 'v', k.x = v`` to a dict (keys and values unquoted)."""
    out = {}
    for item in split_top(text):
        tokens = tokenize(item)
        eq = next((i for i, t in enumerate(tokens) if t.text == "="), None)
        if eq is None:
            raise DeltaParseException(f"expected key = value in the property list, found {item!r}")
        key = "".join(unquote(t) for t in tokens[:eq])
        value = " ".join(unquote(t) for t in tokens[eq + 1 :])
        out[key] = value
    return out


def parse_keys(text: str) -> list[str]:
    return ["".join(unquote(t) for t in tokenize(item)) for item in split_top(text)]


def parameter_marker(sql: str) -> str | None:
    """The first parameter marker (``?``, ``:name``) of ``sql`` outside quotes, or None. A
    ``:`` after a name or a closing bracket is a variant path (``v:a``), not a marker."""
    found = tokenize(sql)
    for i, token in enumerate(found):
        if token.text == "?":
            return "?"
        if token.text == ":" and i + 1 < len(found) and found[i + 1].kind == "word":
            before = found[i - 1] if i else None
            if before is None or (before.kind == "punct" and before.text not in (")", "]")):
                return ":" + found[i + 1].text
            if before.kind == "word" and before.text.upper() in _KEYWORDS_BEFORE_VALUES:
                return ":" + found[i + 1].text
    return None


# Keywords a value may follow directly (a ``:name`` after them is a parameter).
_KEYWORDS_BEFORE_VALUES = frozenset(
    ("AND", "OR", "NOT", "IN", "IS", "LIKE", "BETWEEN", "THEN", "ELSE", "WHEN", "WHERE", "ON")
)
