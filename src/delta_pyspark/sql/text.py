"""The tokens of Delta's SQL statements, as Spark's own lexer reads them, and the
recursive-descent pieces the statements' grammars are built from.

Spark's lexer (``SqlTokens.java``, run by the session parser) cuts the text into tokens, so
strings, quoted names, numbers and comments read as in any statement Spark parses. A
statement's parameter markers (``:name``, ``?``) are reported to the session parser, which
lets Spark's analyzer bind them; the statement is parsed again with the bound values in their
place when it runs. Conditions and types are cut out of the statement as the user wrote them
(values in place of markers), so Spark parses each expression as written.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import NoReturn

from delta_pyspark.exceptions import DeltaParseException

_KINDS = {
    "w": "word",
    "k": "keyword",
    "i": "ident",
    "s": "string",
    "n": "number",
    "p": "punct",
    "x": "unknown",
}


@dataclass(frozen=True)
class Token:
    kind: str  # word | keyword | ident | string | number | punct | unknown | value
    text: str
    start: int  # offsets in the statement's text (for a value: of the marker it replaces)
    end: int
    value: str | None = None  # a bound marker's value as a string (its text is its SQL)

    def is_word(self, *words: str) -> bool:
        return self.kind in ("word", "keyword") and self.text.upper() in words

    @property
    def is_name(self) -> bool:
        return self.kind in ("word", "keyword", "ident")


def tokens_of(sql: str, encoded: str) -> list[Token]:
    """``SqlTokens.encode``'s lines (``kind start end``) as tokens of ``sql``; adjacent
    string literals are one string, as Spark's grammar reads them (``'it' 's'`` is ``its``)."""
    out: list[Token] = []
    for line in encoded.splitlines():
        kind, start, end = line.split(" ")
        first, last = int(start), int(end)
        token = Token(_KINDS[kind], sql[first:last], first, last)
        previous = out[-1] if out else None
        if token.kind == "string" and previous is not None and previous.kind == "string":
            joined = unquote(previous) + unquote(token)
            token = Token("string", sql[previous.start : last], previous.start, last, joined)
            out.pop()
        out.append(token)
    return out


@dataclass(frozen=True)
class Marker:
    """A parameter marker: ``index`` of its first token, ``width`` in tokens, and ``name``
    as the session parser declares it (the name, or ``?`` and the marker's offset)."""

    index: int
    width: int
    name: str


# Words after which ``:`` opens a marker, not a variant path (``v:a``): those a value follows
# in Spark's expressions and in Delta's statements (RETAIN :hours HOURS, LIMIT :n, ...).
_BEFORE_VALUES = frozenset(
    ("AND", "OR", "NOT", "IN", "IS", "LIKE", "BETWEEN", "THEN", "ELSE", "WHEN", "WHERE", "ON")
).union(("SELECT", "CASE", "HAVING", "RETAIN", "LIMIT", "OF", "LOCATION", "COMMENT"))

# Types whose ``<...>`` holds ``field:type`` pairs, never a marker.
_NESTED_TYPES = ("STRUCT", "MAP", "ARRAY")


def markers(tokens: list[Token]) -> list[Marker]:
    """The parameter markers among ``tokens``, as Spark's grammar reads them: ``?``, and
    ``:name`` where a value may start (a ``:`` right after a name or ``)``/``]`` reads a
    variant's field, ``v:a``; inside ``STRUCT<...>`` it separates a field from its type)."""
    found = []
    in_type = 0  # depth of STRUCT<...>, MAP<...>, ARRAY<...>
    for i, token in enumerate(tokens):
        if token.text == "<" and i and tokens[i - 1].is_word(*_NESTED_TYPES):
            in_type += 1
        elif token.text == ">" and in_type:
            in_type -= 1
        elif token.text == ">>" and in_type:
            in_type = max(0, in_type - 2)
        if token.text == "?" and token.kind == "punct":
            found.append(Marker(i, 1, f"?{token.start}"))
            continue
        if token.text != ":" or i + 1 == len(tokens) or in_type:
            continue
        name = tokens[i + 1]
        if not name.is_name or name.kind == "ident" or name.start != token.end:
            continue
        before = tokens[i - 1] if i else None
        if (
            before is None
            or (before.kind == "punct" and before.text not in (")", "]"))
            or before.is_word(*_BEFORE_VALUES)
        ):
            found.append(Marker(i, 2, name.text))
    return found


def bind(sql: str, tokens: list[Token], values: list[str] | None) -> list[Token]:
    """``tokens`` with each marker replaced by its bound value (``DeltaCommand``'s encoding:
    kind ``s`` a string, ``n`` a number or ``e`` another value, the length of its SQL in
    characters, ``:``, its SQL, then the value as a string) or, before Spark has bound them
    (``values`` None), by a placeholder a literal's place accepts. A value other than a
    string reads as one term wherever it lands (``-:v`` with -1 is ``-(-1)``)."""
    found = markers(tokens)
    if values is not None and len(values) != len(found):
        raise DeltaParseException(
            f"the statement has {len(found)} parameter markers and {len(values)} bound values"
        )
    out = list(tokens)
    for number, marker in reversed(list(enumerate(found))):
        first, last = tokens[marker.index], tokens[marker.index + marker.width - 1]
        if values is None:
            value = Token("value", sql[first.start : last.end], first.start, last.end)
        else:
            encoded = values[number]
            length, rest = encoded[1:].split(":", 1)
            text, plain = rest[: int(length)], rest[int(length) :]
            if encoded[0] != "s":
                text = f"({text})"
            value = Token(_VALUE_KINDS[encoded[0]], text, first.start, last.end, plain)
        out[marker.index : marker.index + marker.width] = [value]
    return out


_VALUE_KINDS = {"s": "string", "n": "number", "e": "value"}


def unquote(token: Token) -> str:
    if token.value is not None:
        return token.value
    if token.kind == "ident":
        return token.text[1:-1].replace("``", "`")
    if token.kind == "string":
        if token.text[0] in "rR":  # a raw string: no escapes
            return token.text[2:-1]
        return re.sub(r"\\(.)", _unescape, token.text[1:-1])
    return token.text


# Spark's escapes in string literals (``\%`` and ``\_`` keep their backslash, for LIKE).
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "0": "\0", "Z": "\x1a"}


def _unescape(escape: re.Match[str]) -> str:
    char = escape.group(1)
    if char in "%_":
        return "\\" + char
    return _ESCAPES.get(char, char)


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


@dataclass
class StatementParser:
    """Recursive descent over some of a statement's tokens (all of them, or a part such as
    the inside of parentheses), with the statement's text for messages and cut-outs."""

    sql: str
    tokens: list[Token]
    pos: int = 0
    bound: bool = field(default=True)  # markers hold values (False: placeholders)
    stop: Token | None = None  # for a part: the token after it (where its end is reported)
    top: bool = True  # the whole statement (whose final ``;`` ends it), not a part

    def part(self, tokens: list[Token], stop: Token | None) -> StatementParser:
        return StatementParser(self.sql, tokens, bound=self.bound, stop=stop, top=False)

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
        last = self.pos == len(self.tokens) - 1
        return self.pos >= len(self.tokens) or (self.top and last and self.at(";"))

    def end(self) -> None:
        if not self.done():
            self.fail("the end of the statement")
        self.pos = len(self.tokens)

    def fail(self, expected: str) -> NoReturn:
        """A syntax error at the next token, worded and placed as Spark's own."""
        token = self.peek() if self.pos < len(self.tokens) else self.stop
        offset = token.start if token is not None else len(self.sql.rstrip())
        near = f"'{token.text}'" if token is not None else "end of input"
        line = self.sql.count("\n", 0, offset) + 1
        column = offset - (self.sql.rfind("\n", 0, offset) + 1)
        lines = self.sql.split("\n")
        pointer = "-" * column + "^^^"
        shown = "\n".join([*lines[:line], pointer, *lines[line:]])
        raise DeltaParseException(
            f"[PARSE_SYNTAX_ERROR] Syntax error at or near {near}: expected {expected}. "
            f"SQLSTATE: 42601 (line {line}, pos {column})\n\n== SQL ==\n{shown}\n"
        )

    # -- pieces
    def table(self) -> TableRef:
        first = self.peek()
        if first is not None and first.kind == "string":  # VACUUM '/path', as delta-spark
            self.pos += 1
            return TableRef(("delta", unquote(first)), first.text)
        if first is None or not first.is_name:
            self.fail("a table name or delta.`path`")
        parts = [unquote(first)]
        self.pos += 1
        start = self.pos - 1
        while self.at(".") and (nxt := self.peek(1)) is not None and nxt.is_name:
            parts.append(unquote(nxt))
            self.pos += 2
        return TableRef(tuple(parts), self.text(start, self.pos))

    def identifier(self, what: str) -> str:
        token = self.peek()
        if token is None or not token.is_name:
            self.fail(what)
        self.pos += 1
        return unquote(token)

    def integer(self, what: str) -> int:
        token = self.peek()
        if token is not None and token.kind == "value" and not self.bound:
            self.pos += 1
            return 0  # a marker: the statement is parsed again with its value
        if token is None or token.kind != "number" or not unquote(token).isdigit():
            self.fail(what)
        self.pos += 1
        return int(unquote(token))

    def number(self, what: str) -> float:
        """A finite number (any of Spark's spellings: ``2``, ``2L``, ``1.5D``, ``2E3``)."""
        token = self.peek()
        if token is not None and token.kind == "value" and not self.bound:
            self.pos += 1
            return 0.0  # a marker: the statement is parsed again with its value
        if token is None or token.kind != "number":
            self.fail(what)
        try:
            value = float(re.sub(r"(?i)(bd|[lsydf])$", "", unquote(token)))
        except ValueError:
            self.fail(what)
        if not math.isfinite(value):
            self.fail(what)
        self.pos += 1
        return value

    def literal(self, what: str) -> str:
        """A string or number literal's value."""
        token = self.peek()
        if token is not None and token.kind == "value" and not self.bound:
            self.pos += 1
            return "0"  # a marker, standing for any literal: parsed again with its value
        if token is None or not (token.kind in ("string", "number") or token.value):
            self.fail(what)
        self.pos += 1
        return unquote(token)

    def alias(self, *stops: str) -> str | None:
        """``[AS] alias``, unless the next word is one of ``stops``."""
        if self.accept("AS"):
            return self.identifier("an alias after AS")
        token = self.peek()
        if token is not None and token.is_name and not token.is_word(*stops):
            self.pos += 1
            return unquote(token)
        return None

    def text(self, first: int, last: int) -> str:
        """The statement's text of tokens ``first`` to ``last`` (exclusive), bound values in
        place of their markers."""
        pieces = []
        for i in range(first, last):
            token = self.tokens[i]
            if i > first:
                pieces.append(self.sql[self.tokens[i - 1].end : token.start])
            pieces.append(token.text)
        return "".join(pieces).strip()

    def text_until(self, *stops: str, what: str) -> str:
        """The source text up to (not including) the first of the keywords ``stops`` outside
        parentheses and CASE ... END, or to the end; never empty."""
        start = self.pos
        depth = 0
        while not self.done():
            token = self.tokens[self.pos]
            if depth == 0 and token.is_word(*stops):
                break
            if token.text in ("(", "[") or token.is_word("CASE"):
                depth += 1
            elif token.text in (")", "]") or token.is_word("END"):
                depth -= 1
            self.pos += 1
        if self.pos == start:
            self.fail(what)
        return self.text(start, self.pos)

    def rest(self) -> StatementParser:
        """The tokens from here to the end of the statement (a final ``;`` left out)."""
        last = len(self.tokens)
        if self.top and last > self.pos and self.tokens[-1].text == ";":
            last -= 1
        stop = self.tokens[last] if last < len(self.tokens) else self.stop
        part = self.part(self.tokens[self.pos : last], stop)
        self.pos = len(self.tokens)
        return part

    def group(self, what: str) -> StatementParser:
        """The tokens inside the parentheses that follow (moving past them)."""
        if not self.at("("):
            self.fail(what)
        start = self.pos
        depth = 0
        while not self.done():
            token = self.tokens[self.pos]
            self.pos += 1
            if token.text == "(":
                depth += 1
            elif token.text == ")":
                depth -= 1
                if depth == 0:
                    return self.part(self.tokens[start + 1 : self.pos - 1], token)
        self.fail(f"')' closing {what}")

    def all_text(self) -> str:
        return self.text(0, len(self.tokens))

    def items(self) -> list[StatementParser]:
        """The comma-separated parts of these tokens (commas inside brackets kept); an empty
        part (``(a,)``) is a syntax error, none at all an empty list."""
        if not self.tokens:
            return []
        parts, depth, start = [], 0, 0
        for i, token in enumerate(self.tokens):
            if token.text in ("(", "["):
                depth += 1
            elif token.text in (")", "]"):
                depth -= 1
            elif depth == 0 and token.kind == "punct" and token.text == ",":
                parts.append(self.part(self.tokens[start:i], token))
                start = i + 1
        parts.append(self.part(self.tokens[start:], self.stop))
        for part in parts:
            if not part.tokens:
                part.fail("an item of the list")
        return parts

    def properties(self) -> dict[str, str]:
        """``'k' = 'v', k.x = v`` to a dict (keys and values unquoted)."""
        out = {}
        for item in self.items():
            eq = next((i for i, t in enumerate(item.tokens) if t.text == "="), None)
            if eq is None:
                item.fail("key = value in the property list")
            key = "".join(unquote(t) for t in item.tokens[:eq])
            value = " ".join(unquote(t) for t in item.tokens[eq + 1 :])
            out[key] = value
        return out
