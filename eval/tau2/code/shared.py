# What every converted τ² domain's tool code shares, written once and spliced before each domain's own file by
# eval.tau2.domain (never imported): Python's name of a value's type, as τ²'s error texts carry it, a record's
# address (ADDRESS_KEYS is spliced in from eval.tau2.tables), and the transfer tool every τ² domain has.


def type_name(value):
    """``type(value).__name__`` for the values a tool sees: JSON values and what the calculator computes."""
    if value is None:
        return "NoneType"
    if value is ...:
        return "ellipsis"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, complex):
        return "complex"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list):
        return "list"
    if isinstance(value, tuple):
        return "tuple"
    return "dict"


def address_of(row):
    """The ``address`` dict of a row holding the address columns, in τ²'s field order."""
    return {k: row[k] for k in ADDRESS_KEYS}


def transfer_to_human_agents(db, summary):
    return "Transfer successful"
