# The `calculate` tool and its evaluator, shared by the τ² domains that have the tool (spliced into their code by
# eval.tau2.domain; never imported). τ² runs eval(expression) on text made only of "0123456789+-*/(). "; this is
# that subset of Python's expression grammar (numbers, unary + and -, + - * / // **, parentheses, calls, the empty
# tuple, ...) evaluated with Python's own operators, so values and runtime errors are Python's. Syntax errors
# carry the text Python gives for the common cases. type_name is code/shared.py's.
OPERATORS = ("**", "//", "...", "*", "/", "+", "-", "(", ")")


def syntax_error(message, line=1):
    raise ToolError(f"{message} (<string>, line {line})")


def number_token(text, i):
    j = i
    while j < len(text) and text[j] in "0123456789":
        j += 1
    if j < len(text) and text[j] == ".":
        j += 1
        while j < len(text) and text[j] in "0123456789":
            j += 1
        return float(text[i:j]), j
    digits = text[i:j]
    if len(digits) > 1 and digits[0] == "0" and digits.strip("0"):
        syntax_error("leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal "
                     "integers")
    return int(digits), j


def tokens(text):
    out = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == " ":
            i += 1
        elif c in "0123456789" or (c == "." and i + 1 < len(text) and text[i + 1] in "0123456789"):
            value, i = number_token(text, i)
            out.append(("num", value))
        else:
            op = next((o for o in OPERATORS if text.startswith(o, i)), None)
            if op is None:
                syntax_error("invalid syntax")
            out.append(("op", op))
            i += len(op)
    return out


def peek(state):
    return state["toks"][state["at"]] if state["at"] < len(state["toks"]) else ("end", None)


def take(state, op):
    if peek(state) == ("op", op):
        state["at"] = state["at"] + 1
        return True
    return False


def closing(state):
    if not take(state, ")"):
        syntax_error("'(' was never closed" if peek(state)[0] == "end" else "invalid syntax")


def atom(state):
    kind, value = peek(state)
    if kind == "num":
        state["at"] = state["at"] + 1
        return value
    if take(state, "..."):
        return ...
    if take(state, "("):
        if take(state, ")"):
            return ()
        inner = expr(state)
        closing(state)
        return inner
    if kind == "op" and value == ")":
        syntax_error("unmatched ')'")
    syntax_error("invalid syntax")


def primary(state):
    value = atom(state)
    while take(state, "("):  # a call: Python evaluates the argument, then finds the value is not callable
        if not take(state, ")"):
            expr(state)
            closing(state)
        raise TypeError(f"'{type_name(value)}' object is not callable")
    return value


def power(state):
    base = primary(state)
    if take(state, "**"):
        return base ** factor(state)
    return base


def factor(state):
    if take(state, "-"):
        return -factor(state)
    if take(state, "+"):
        return +factor(state)
    return power(state)


def term(state):
    value = factor(state)
    while True:
        if take(state, "*"):
            value = value * factor(state)
        elif take(state, "//"):
            value = value // factor(state)
        elif take(state, "/"):
            value = value / factor(state)
        else:
            return value


def expr(state):
    value = term(state)
    while True:
        if take(state, "+"):
            value = value + term(state)
        elif take(state, "-"):
            value = value - term(state)
        else:
            return value


def arithmetic(expression):
    """``round(float(eval(expression)), 2)``'s float(...) argument, as τ²'s calculate computes it."""
    toks = tokens(expression)
    if not toks:
        syntax_error("invalid syntax", 0)
    state = {"toks": toks, "at": 0}
    try:
        value = expr(state)
        kind, op = peek(state)
        if kind != "end":
            syntax_error("unmatched ')'" if op == ")" else "invalid syntax")
        if isinstance(value, tuple) or value is ...:
            raise TypeError(f"float() argument must be a string or a real number, not '{type_name(value)}'")
        return float(value)
    except (ArithmeticError, TypeError, ValueError) as e:
        raise ToolError(str(e))


def calculate(db, expression):
    if not all(char in "0123456789+-*/(). " for char in expression):
        raise ToolError("Invalid characters in expression")
    return str(round(float(arithmetic(expression)), 2))
