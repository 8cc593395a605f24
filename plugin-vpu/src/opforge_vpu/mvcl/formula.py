"""The integer formulas of MVCL files (work sizes, buffer sizes): numbers, the dimension letters
``B F Y X``, ``+ - * / %`` and parentheses, evaluated with C semantics (``/`` and ``%`` truncate
toward zero). A tiny recursive-descent parser: nothing is ever handed to ``eval``."""

from __future__ import annotations

import re

from opforge_gpu.runtime import KernelConfigError

LETTERS = ("B", "F", "Y", "X")
_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_]\w*)|(.))")
#: deeper nesting is not a work size but an attack on the parser's recursion
_MAX_DEPTH = 64


def _tokens(text: str, where: str) -> list[str]:
    out: list[str] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:  # only trailing blanks are left
            break
        num, name, op = m.groups()
        if num is not None:
            out.append(num)
        elif name is not None:
            name = name.upper() if name.upper() in LETTERS else name  # OpenVINO accepted b, f, y, x too
            if name not in LETTERS:
                raise KernelConfigError(f"{where}: formula '{text}' uses '{name}'; only B, F, Y, X, integers, "
                                        "+ - * / % and parentheses are allowed")
            out.append(name)
        elif op in "+-*/%()":
            out.append(op)
        else:
            raise KernelConfigError(f"{where}: formula '{text}' has the character {op!r}; only B, F, Y, X, "
                                    "integers, + - * / % and parentheses are allowed")
        pos = m.end()
    if not out:
        raise KernelConfigError(f"{where}: empty formula")
    return out


class Formula:
    """A parsed formula; ``where`` ("file.xml:12") prefixes its errors."""

    def __init__(self, text: str, where: str) -> None:
        self.text = text.strip()
        self.where = where
        self._toks = _tokens(text, where)
        self._pos = 0
        self._tree = self._expr(0)
        if self._pos != len(self._toks):
            raise KernelConfigError(f"{where}: formula '{self.text}': unexpected '{self._toks[self._pos]}'")

    # grammar: expr = term (('+'|'-') term)*; term = unary (('*'|'/'|'%') unary)*;
    #          unary = ('-'|'+') unary | atom; atom = number | letter | '(' expr ')'
    def _peek(self) -> str | None:
        return self._toks[self._pos] if self._pos < len(self._toks) else None

    def _take(self) -> str:
        tok = self._peek()
        if tok is None:
            raise KernelConfigError(f"{self.where}: formula '{self.text}' ends too early")
        self._pos += 1
        return tok

    def _expr(self, depth: int) -> object:
        node = self._term(depth)
        while self._peek() in ("+", "-"):
            node = (self._take(), node, self._term(depth))
        return node

    def _term(self, depth: int) -> object:
        node = self._unary(depth)
        while self._peek() in ("*", "/", "%"):
            node = (self._take(), node, self._unary(depth))
        return node

    def _unary(self, depth: int) -> object:
        if depth > _MAX_DEPTH:
            raise KernelConfigError(f"{self.where}: formula '{self.text[:40]}...' is nested too deeply")
        if self._peek() in ("-", "+"):
            op = self._take()
            return ("neg", self._unary(depth + 1)) if op == "-" else self._unary(depth + 1)
        tok = self._take()
        if tok == "(":
            node = self._expr(depth + 1)
            if self._take() != ")":
                raise KernelConfigError(f"{self.where}: formula '{self.text}': missing ')'")
            return node
        if tok.isdigit():
            return int(tok)
        if tok in LETTERS:
            return tok
        raise KernelConfigError(f"{self.where}: formula '{self.text}': unexpected '{tok}'")

    def __call__(self, dims: dict[str, int]) -> int:
        return self._eval(self._tree, dims)

    def _eval(self, node: object, dims: dict[str, int]) -> int:
        if isinstance(node, int):
            return node
        if isinstance(node, str):
            return int(dims[node])
        assert isinstance(node, tuple)
        if node[0] == "neg":
            return -self._eval(node[1], dims)
        op, a_node, b_node = node
        a, b = self._eval(a_node, dims), self._eval(b_node, dims)
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if b == 0:
            raise KernelConfigError(f"{self.where}: formula '{self.text}' divides by zero for "
                                    + ", ".join(f"{k}={v}" for k, v in dims.items()))
        q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
        return q if op == "/" else a - b * q

    def __repr__(self) -> str:
        return f"Formula({self.text!r})"
