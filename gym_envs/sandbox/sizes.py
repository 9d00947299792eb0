"""Size guards: every way spec code can multiply, raise to a power, shift or repeat, checked before it runs.

An operation whose result's size is set by an argument's *value* (``'a' * n``, ``x ** n``, ``1 << n``,
``math.factorial(n)``, ``itertools.repeat(x, n)`` materialised, ``random.getrandbits(n)``, ``round(5, -n)``)
allocates or computes without bound in one step, before any deadline or memory limit has a say, and in process
nothing else bounds it. Each is checked against :class:`~gym_envs.sandbox.limits.Limits` (``max_sequence``
elements, ``max_int_bits`` bits; decimal digits are ``max_int_bits / log2(10)``) and refused with
:class:`~gym_envs.errors.ResourceLimit`:

* :class:`SizeGuard` holds the checks; :meth:`SizeGuard.binop` is ``_binop_``, the operators ``*``, ``**``,
  ``<<`` (and ``%``, whose text it scrubs: :mod:`~gym_envs.sandbox.reprs`) for every operand type: integers and
  fractions by their bits, anything with a length times an integer by the product; ``Decimal`` arithmetic is
  bounded by its context, and every context spec code can make is capped (:meth:`SizeGuard.decimal_context`).
* :meth:`SizeGuard.replacements` maps each function that does the same to its guarded stand-in, by the original's
  identity (so a re-export such as ``statistics.mul``, which is ``operator.mul``, is replaced too): ``operator``'s
  ``mul``/``pow``/``lshift``/``mod`` and their in-place forms, ``math.prod``/``factorial``/
  ``comb``/``perm``/``lcm``, ``itertools.repeat``/``product``/``combinations_with_replacement``/``tee``,
  ``statistics.fmean`` (it multiplies its arguments with ``operator.mul`` inside), ``json``'s ``indent``
  (repeated at every nesting level), and the ``Decimal``, ``Context`` and ``Fraction`` constructors (a number with
  a huge exponent becomes a huge integer when converted: ``int(Decimal('1e999999999'))``,
  ``Fraction('1e999999999')``).
* :meth:`SizeGuard.builtins` gives ``range``, ``bytes``, ``pow`` and ``round``; :meth:`SizeGuard.random_class`
  the ``random.Random`` of spec code, whose ``getrandbits`` and ``randbytes`` are checked.

Not covered (bounded only by the worker's limits; see the package's threat model): allocations that grow with
the time spent (``list(itertools.count())``, ``s = s + s`` in a loop), widths (``'x'.ljust(10**10)``), and text
built from a repeated piece (``''.join([s] * n)``, ``str.replace`` of an empty pattern).
"""

from __future__ import annotations

import decimal
import fractions
import itertools
import json
import math
import operator
import random
import re
import statistics
from collections.abc import Callable, Iterable
from typing import Any

from gym_envs.errors import ResourceLimit
from gym_envs.sandbox.limits import Limits
from gym_envs.sandbox.reprs import scrubbed_mod
from gym_envs.sandbox.surface import stand_in

__all__ = ["MAX_DECIMAL_PREC", "MAX_JSON_INDENT", "SizeGuard"]

_Fraction, _Decimal = fractions.Fraction, decimal.Decimal
#: the most digits a decimal context spec code makes may compute with: ``exp``, ``ln`` and ``power`` take
#: cubic time in the precision (a tenth of a second at 1,000 digits, a minute at 30,000)
MAX_DECIMAL_PREC = 1_000
#: the longest ``indent`` of ``json.dumps``: each nesting level repeats it (``' ' * indent * level``)
MAX_JSON_INDENT = 100
_EXPONENT = re.compile(r"[eE]\s*([-+]?[0-9_]+)\s*$")


def _named(method: Callable[..., Any], original: Any) -> Callable[..., Any]:
    """A plain function calling ``method``, named and documented as ``original`` (what spec code sees)."""
    def call(*args: Any, **kwargs: Any) -> Any:
        return method(*args, **kwargs)

    call.__name__ = call.__qualname__ = original.__name__
    call.__doc__ = f"{original.__name__}(), sized (the sandbox's limits)\n\n{original.__doc__ or ''}"
    return call


def _bits(x: Any) -> int | None:
    """Bits of an integer, or of the larger part of a fraction; ``None`` for anything else."""
    if isinstance(x, int):
        return x.bit_length()
    if isinstance(x, _Fraction):
        return max(x.numerator.bit_length(), x.denominator.bit_length())
    return None


class SizeGuard:
    """The size checks of one engine's limits, and the guarded stand-ins built on them."""

    def __init__(self, limits: Limits):
        self.max_sequence = limits.max_sequence
        self.max_bits = limits.max_int_bits
        self.max_digits = max(28, int(limits.max_int_bits / math.log2(10)))  #: decimal digits of max_bits
        self.binop = self._make_binop()

    # -- the checks ------------------------------------------------------------------------------
    def check_mul(self, a: Any, b: Any) -> None:
        """Refuse ``a * b`` when its result would be too large."""
        ba, bb = _bits(a), _bits(b)
        if ba is not None and bb is not None:
            if ba + bb > self.max_bits:
                raise ResourceLimit(f"product would exceed {self.max_bits:,} bits")
            return
        if isinstance(a, int):
            n, seq = a, b
        elif isinstance(b, int):
            n, seq = b, a
        else:
            return  # floats, complex; Decimal arithmetic is bounded by its context
        try:
            size = len(seq)
        except TypeError:
            return
        if size * n > self.max_sequence:
            raise ResourceLimit(f"sequence repetition would create {size * n:,} elements "
                                f"(limit {self.max_sequence:,})")

    def check_pow(self, a: Any, b: Any) -> None:
        """Refuse ``a ** b`` when its result would be too large (an integral fraction exponent included)."""
        if isinstance(b, int):
            e = int(b)
        elif isinstance(b, _Fraction) and b.denominator == 1:
            e = b.numerator
        else:
            return  # a float or fractional exponent gives a float; Decimal is bounded by its context
        bits = _bits(a)
        if bits is None or bits <= 1 or (e < 0 and isinstance(a, int)):  # int ** -n is a float
            return
        if abs(e) * bits > self.max_bits:
            raise ResourceLimit(f"power would exceed {self.max_bits:,} bits")

    def check_shift(self, a: Any, b: Any) -> None:
        """Refuse ``a << b`` when its result would be too large."""
        if isinstance(a, int) and isinstance(b, int) and b > 0 and a and a.bit_length() + b > self.max_bits:
            raise ResourceLimit(f"shift by {b} exceeds {self.max_bits:,} bits")

    def check_count(self, n: Any, what: str) -> None:
        """Refuse ``n`` elements (an integer argument that sets a result's length) above ``max_sequence``."""
        if isinstance(n, int) and n > self.max_sequence:
            raise ResourceLimit(f"{what} of {n:,} elements exceeds {self.max_sequence:,}")

    def check_int_bits(self, bits: int, what: str) -> None:
        """Refuse an integer result of ``bits`` bits (an upper bound) above ``max_int_bits``."""
        if bits > self.max_bits:
            raise ResourceLimit(f"{what} would exceed {self.max_bits:,} bits")

    def _make_binop(self) -> Callable[[str, Any, Any], Any]:
        max_bits = self.max_bits
        check_mul, check_pow, check_shift = self.check_mul, self.check_pow, self.check_shift

        def binop(op: str, a: Any, b: Any) -> Any:
            """``_binop_``: ``*``, ``**``, ``<<`` with their results' sizes checked first; ``%`` scrubbed."""
            if op == "mul":
                if a.__class__ is int and b.__class__ is int:
                    if a.bit_length() + b.bit_length() > max_bits:
                        raise ResourceLimit(f"integer product would exceed {max_bits:,} bits")
                else:
                    check_mul(a, b)
                return a * b
            if op == "mod":
                return scrubbed_mod(a, b)
            if op == "pow":
                check_pow(a, b)
                return a**b
            check_shift(a, b)
            return a << b

        return binop

    # -- decimal -----------------------------------------------------------------------------------
    def decimal_context(self, prec: Any = None, rounding: Any = None, Emin: Any = None,
                        Emax: Any = None, capitals: Any = None, clamp: Any = None, flags: Any = None,
                        traps: Any = None) -> decimal.Context:
        """A decimal context (``decimal.Context(...)`` in spec code): what is not given is Python's default,
        spelled out (never copied from the process's ``DefaultContext``, which the host may change), except the
        exponent range, ``max_digits``. A precision beyond :data:`MAX_DECIMAL_PREC` or an exponent range beyond
        ``max_digits`` is refused (an operation would take minutes, or a result's conversion to ``int`` be huge)."""
        prec = 28 if prec is None else prec
        Emax = self.max_digits if Emax is None else Emax
        Emin = -self.max_digits if Emin is None else Emin
        for name, value, most in (("prec", prec, MAX_DECIMAL_PREC), ("Emax", Emax, self.max_digits),
                                  ("Emin", Emin, self.max_digits)):
            if isinstance(value, int) and abs(value) > most:
                raise ResourceLimit(f"Context({name}={value:,}): beyond {most:,} digits is not allowed")
        return decimal.Context(
            prec=prec, rounding=decimal.ROUND_HALF_EVEN if rounding is None else rounding, Emin=Emin, Emax=Emax,
            capitals=1 if capitals is None else capitals, clamp=0 if clamp is None else clamp,
            flags=[] if flags is None else flags,
            traps=[decimal.InvalidOperation, decimal.DivisionByZero, decimal.Overflow] if traps is None else traps)

    def _decimal(self, value: Any = "0", context: Any = None) -> decimal.Decimal:
        """``decimal.Decimal(...)`` in spec code: refused when converting it to an integer or a fraction would
        take more than ``max_digits`` digits (its digits plus its exponent)."""
        d = _Decimal(value, context)
        if d.is_finite() and d:
            t = d.as_tuple()
            if len(t.digits) + abs(t.exponent) > self.max_digits:  # type: ignore[arg-type]
                raise ResourceLimit(f"Decimal with {len(t.digits):,} digits and exponent {t.exponent:,} exceeds "
                                    f"{self.max_digits:,} digits")
        return d

    def _fraction(self, numerator: Any = 0, denominator: Any = None) -> fractions.Fraction:
        """``fractions.Fraction(...)`` in spec code: a string's exponent is checked first (it is computed as a
        power of ten)."""
        if isinstance(numerator, str):
            m = _EXPONENT.search(numerator)
            try:
                exponent = abs(int(m.group(1))) if m is not None else 0
            except ValueError:  # not a number: Fraction says what is wrong
                exponent = 0
            self.check_int_bits(int(exponent * math.log2(10)), "Fraction's exponent")
        return _Fraction(numerator, denominator)

    # -- functions -----------------------------------------------------------------------------------
    def _prod(self, iterable: Iterable[Any], /, *, start: Any = 1) -> Any:
        """``math.prod`` through the size guard."""
        binop = self.binop
        for x in iterable:
            start = binop("mul", start, x)
        return start

    def _factorial(self, n: Any, /) -> int:
        if isinstance(n, int) and n > 1:
            self.check_int_bits(n * n.bit_length(), "factorial")
        return math.factorial(n)

    def _comb(self, n: Any, k: Any, /) -> int:
        if isinstance(n, int) and isinstance(k, int) and 0 < k < n:
            self.check_int_bits(min(min(k, n - k) * n.bit_length(), n), "comb")
        return math.comb(n, k)

    def _perm(self, n: Any, k: Any = None, /) -> int:
        if isinstance(n, int) and n > 1 and (k is None or (isinstance(k, int) and k > 0)):
            self.check_int_bits(min(n if k is None else k, n) * n.bit_length(), "perm")
        return math.perm(n, k)

    def _lcm(self, *integers: Any) -> int:
        """``math.lcm``, refused as soon as a prefix's least common multiple exceeds ``max_int_bits``."""
        acc = 1
        for x in integers:
            acc = math.lcm(acc, x)
            self.check_int_bits(acc.bit_length(), "lcm")
        return acc

    def _repeat(self, *args: Any, **kwargs: Any) -> Any:
        times = kwargs.get("times", args[1] if len(args) > 1 else None)
        self.check_count(times, "repeat")
        return itertools.repeat(*args, **kwargs)

    def _product(self, *iterables: Any, repeat: Any = 1) -> Any:
        if isinstance(repeat, int):
            self.check_count(len(iterables) * repeat, "product(repeat=...)")
        return itertools.product(*iterables, repeat=repeat)

    def _combinations_with_replacement(self, iterable: Any, r: Any) -> Any:
        self.check_count(r, "combinations_with_replacement")
        return itertools.combinations_with_replacement(iterable, r)

    def _tee(self, iterable: Any, n: Any = 2, /) -> tuple[Any, ...]:
        self.check_count(n, "tee")
        return itertools.tee(iterable, n)

    @staticmethod
    def _check_indent(indent: Any) -> None:
        size = indent if isinstance(indent, int) else len(indent) if isinstance(indent, str) else 0
        if size > MAX_JSON_INDENT:
            raise ResourceLimit(f"a JSON indent of {size:,} exceeds {MAX_JSON_INDENT} (every nesting level repeats it)")

    def _dumps(self, obj: Any, **kwargs: Any) -> str:
        self._check_indent(kwargs.get("indent"))
        return json.dumps(obj, **kwargs)

    def _dump(self, obj: Any, fp: Any, **kwargs: Any) -> None:
        self._check_indent(kwargs.get("indent"))
        json.dump(obj, fp, **kwargs)

    def _json_encoder(self, **kwargs: Any) -> json.JSONEncoder:
        self._check_indent(kwargs.get("indent"))
        return json.JSONEncoder(**kwargs)

    def _fmean(self, data: Any, weights: Any = None) -> float:
        """``statistics.fmean``, whose weighted form multiplies ``data`` by ``weights`` with ``operator.mul``."""
        if weights is None:
            return statistics.fmean(data)
        data, weights = list(data), list(weights)
        for x, w in zip(data, weights, strict=False):  # unequal lengths: fmean says so
            self.check_mul(x, w)
        return statistics.fmean(data, weights)

    def replacements(self) -> dict[Any, Any]:
        """``{original: guarded stand-in}`` for every function of the allowed modules that multiplies, raises to
        a power, shifts or repeats by an argument's value (classes are replaced by a :func:`stand_in`)."""
        binop = self.binop

        def guarded(op: str, name: str) -> Callable[[Any, Any], Any]:
            def call(a: Any, b: Any, /) -> Any:
                return binop(op, a, b)

            call.__name__ = call.__qualname__ = name
            call.__doc__ = f"operator.{name} through the size guard"
            return call

        out: dict[Any, Any] = {getattr(operator, name): guarded(op, name) for op, names in (
            ("mul", ("mul", "imul")), ("pow", ("pow", "ipow")), ("lshift", ("lshift", "ilshift")),
            ("mod", ("mod", "imod")))
            for name in names}
        out.update({original: _named(method, original) for original, method in (
            (math.prod, self._prod), (math.factorial, self._factorial), (math.comb, self._comb),
            (math.perm, self._perm), (math.lcm, self._lcm), (statistics.fmean, self._fmean), (itertools.tee, self._tee),
            (json.dumps, self._dumps), (json.dump, self._dump))})
        out.update({
            itertools.repeat: stand_in(itertools.repeat, self._repeat),
            itertools.product: stand_in(itertools.product, self._product),
            itertools.combinations_with_replacement: stand_in(itertools.combinations_with_replacement,
                                                              self._combinations_with_replacement),
            decimal.Decimal: stand_in(decimal.Decimal, self._decimal),
            decimal.Context: stand_in(decimal.Context, self.decimal_context),
            fractions.Fraction: stand_in(fractions.Fraction, self._fraction),
            json.JSONEncoder: stand_in(json.JSONEncoder, self._json_encoder),
        })
        return out

    # -- builtins and random ----------------------------------------------------------------------------
    def builtins(self) -> dict[str, Any]:
        """The sized builtins: ``range``, ``bytes``, ``pow`` and ``round``."""
        max_seq, binop, check_int_bits = self.max_sequence, self.binop, self.check_int_bits

        def safe_range(*args: int) -> range:
            r = range(*args)
            if len(r) > max_seq:
                raise ResourceLimit(f"range of {len(r):,} elements exceeds {max_seq:,}")
            return r

        def safe_bytes(*args: Any) -> bytes:
            if args and isinstance(args[0], int) and args[0] > max_seq:
                raise ResourceLimit(f"bytes({args[0]:,}) exceeds {max_seq:,}")
            return bytes(*args)

        def safe_pow(base: Any, exp: Any, mod: Any = None) -> Any:
            return pow(base, exp, mod) if mod is not None else binop("pow", base, exp)

        def safe_round(number: Any, ndigits: Any = None) -> Any:
            """``round``: an integer or fraction rounded to ``ndigits`` computes ``10 ** abs(ndigits)``."""
            if isinstance(ndigits, int) and isinstance(number, int | _Fraction):
                check_int_bits(int(abs(ndigits) * math.log2(10)), "round()'s power of ten")
            return round(number, ndigits)

        return {"range": safe_range, "bytes": safe_bytes, "pow": safe_pow, "round": safe_round}

    def random_class(self) -> type[random.Random]:
        """The ``random.Random`` spec code makes instances of: ``getrandbits`` and ``randbytes`` checked."""
        max_bits, max_seq = self.max_bits, self.max_sequence

        class Random(random.Random):
            """``random.Random`` with ``getrandbits(k)`` and ``randbytes(n)`` sized (same stream)."""

            def getrandbits(self, k: int, /) -> int:
                if isinstance(k, int) and k > max_bits:
                    raise ResourceLimit(f"getrandbits({k:,}) exceeds {max_bits:,} bits")
                return super().getrandbits(k)

            def randbytes(self, n: int) -> bytes:
                if isinstance(n, int) and n > max_seq:
                    raise ResourceLimit(f"randbytes({n:,}) exceeds {max_seq:,}")
                return random.Random.getrandbits(self, n * 8).to_bytes(n, "little")

        return Random
