"""The sandbox's surface: how every callable spec code can reach is named, and what is taken out of it.

Spec code reaches callables through its builtins and the module views (:mod:`~gym_envs.sandbox.modules`),
and from those through attributes (``_getattr_``): classes and their methods, instances, re-exports (an allowed
module's public name for another module's function: ``statistics.mul`` is ``operator.mul``). Each one is
classified, once, by the identity of the object, so a re-export gets the treatment of its original:

* **removed** (:data:`REMOVED`): left out of every view, whichever module re-exports it;
* **replaced**: every view holds a guarded stand-in instead (:func:`gym_envs.sandbox.modules.views` builds the
  map, from :mod:`~gym_envs.sandbox.sizes` and :mod:`~gym_envs.sandbox.reprs`); a class is replaced by a
  :func:`stand_in`, so ``isinstance`` and its class attributes still work;
* **wrapped**: refused or wrapped when read as an attribute (:data:`gym_envs.sandbox.guards.SHARED_ATTRIBUTES`,
  :data:`~gym_envs.sandbox.guards.BLOCKED_ATTRS`);
* **allowed** as it is (:data:`ALLOWED`, by :func:`canonical_name`, with the reason).

``tests/gym_envs/sandbox/test_surface.py`` enumerates everything reachable afresh, from each allowed module and
the builtins, and fails naming any callable that is in none of these (a new Python version adding a function
is one), and any original of a removed or replaced object that is still reachable.
"""

from __future__ import annotations

import _thread
import abc
import collections
import decimal
import functools
import re
import reprlib
import string
import types
from collections.abc import Callable
from typing import Any

__all__ = ["ALLOWED", "AUDITED_PYTHON", "REMOVED", "StandIn", "canonical_name", "stand_in"]

#: the Python version :data:`ALLOWED` was audited on (its stale-entry check runs only there)
AUDITED_PYTHON = (3, 11)

#: originals left out of every module view (by identity, so re-exports too: ``functools.get_cache_token`` is
#: ``abc.get_cache_token``, ``functools.RLock`` is ``_thread.RLock``), and why
REMOVED: dict[Any, str] = {
    string.Formatter: "attribute walks through format strings ('{0.__class__}')",
    string.Template: "attribute walks through its pattern and substitutions",
    decimal.getcontext: "the thread's decimal context, shared with the host",
    decimal.setcontext: "replaces the thread's decimal context, shared with the host",
    decimal.localcontext: "the thread's decimal context, shared with the host",
    decimal.DefaultContext: "the template every new context copies: process-wide and writable",
    decimal.BasicContext: "a process-wide writable context",
    decimal.ExtendedContext: "a process-wide writable context",
    re.purge: "clears the process-wide pattern cache",
    vars(re)["Scanner"]: "its flags reach the compiler unchecked (re.DEBUG prints to the process's stdout)",
    re.template: "its flags reach the compiler unchecked (re.DEBUG prints to the process's stdout)",
    functools.total_ordering: "adds methods to the class it is given, a shared one here",
    functools.singledispatch: "reads annotations with typing.get_type_hints, which evals strings with the real "
                              "builtins",
    functools.singledispatchmethod: "reads annotations with typing.get_type_hints, as singledispatch",
    abc.get_cache_token: "the process-wide ABC invalidation counter: it differs between processes and runs",
    _thread.RLock: "a lock: no use to single-threaded spec code, and a blocking acquire waits on the host",
    reprlib.recursive_repr: "keys its guard by id(): a decorator for classes spec code cannot define",
    types.GenericAlias: "typing machinery for annotations, which spec code does not keep",
    functools.cached_property: "a descriptor for class bodies, which spec code cannot write; it holds an RLock",
    functools.partialmethod: "a descriptor for class bodies, which spec code cannot write",
    collections.UserString: "converts any object with the process's str, addresses included (UserString(obj), "
                            "'' + obj, '%r' % obj); spec code has str",
}


def canonical_name(obj: Any) -> str | None:
    """The name the audit classifies ``obj`` by: ``module.qualname`` of a function or class, ``module.Class.name``
    of a method (bound or not, found on the class that defines it), ``module.Class()`` of another callable (an
    instance of that class); ``None`` for what cannot be called."""
    if isinstance(obj, types.MethodType):
        return canonical_name(obj.__func__)
    if isinstance(obj, types.BuiltinFunctionType):  # also C methods bound to an instance or a class
        owner = obj.__self__
        if owner is None or isinstance(owner, types.ModuleType):  # a function, or a static method (str.maketrans)
            return f"{obj.__module__ or getattr(owner, '__name__', 'builtins')}.{obj.__qualname__}"
        cls = owner if isinstance(owner, type) else type(owner)
        return _defined_on(cls, obj.__name__)
    if isinstance(obj, types.MethodDescriptorType | types.ClassMethodDescriptorType | types.WrapperDescriptorType
                  | types.MethodWrapperType | types.GetSetDescriptorType | types.MemberDescriptorType):
        return _defined_on(obj.__objclass__, obj.__name__)
    if isinstance(obj, types.FunctionType | type):
        return f"{obj.__module__}.{obj.__qualname__}"
    if callable(obj):  # a callable instance: named by its class
        return f"{canonical_name(type(obj))}()"
    return None


def _defined_on(cls: type, name: str) -> str:
    for klass in cls.__mro__:
        if name in vars(klass):
            return f"{klass.__module__}.{klass.__qualname__}.{name}"
    return f"{cls.__module__}.{cls.__qualname__}.{name}"


class StandIn(type):
    """The metaclass of :func:`stand_in`'s classes (the guards read attributes of ``_real``, the class it stands
    in for, so every check on classes applies to it)."""

    _real: type
    _make: Callable[..., Any]

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls._make(*args, **kwargs)

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, cls._real)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, cls._real)

    def __getattr__(cls, name: str) -> Any:
        return getattr(cls._real, name)

    def __dir__(cls) -> list[str]:
        return dir(cls._real)

    def __repr__(cls) -> str:
        return repr(cls._real)


def stand_in(real: type, make: Callable[..., Any]) -> type:
    """A class that spec code uses in place of ``real``: calling it calls ``make`` (which checks its arguments
    and builds a real instance), while ``isinstance``, class attributes and ``repr`` are ``real``'s."""
    return StandIn(real.__name__, (), {"_real": real, "_make": staticmethod(make), "__module__": real.__module__,
                                        "__qualname__": real.__qualname__, "__doc__": real.__doc__})


def _group(reason: str, members: dict[str, str]) -> dict[str, str]:
    """``{owner: "name name ..."}`` as ``{"owner.name": reason}``."""
    return {f"{owner}.{name}" if name != "." else owner: reason
            for owner, names in members.items() for name in names.split()}


#: Callables spec code reaches and uses as they are, by :func:`canonical_name`, each with the reason it is safe as
#: it is. Anything reachable that is neither here, removed, replaced nor wrapped fails the surface test.
ALLOWED: dict[str, str] = {
    **_group("a builtin function or type: its result is bounded by its arguments and it reads no process state "
             "(range, bytes, pow, round, repr and str are replaced)", {
        "builtins": "abs all any bin bool callable chr complex dict divmod enumerate filter float frozenset hex int "
                    "isinstance iter len list map max min next oct ord reversed set slice sorted sum tuple zip",
    }),
    **_group("an exception class spec code may raise or catch: reading its attributes is refused, but for .args", {
        "builtins": "ArithmeticError AssertionError AttributeError Exception IndexError KeyError LookupError "
                    "NameError NotImplementedError OverflowError RuntimeError StopIteration TypeError ValueError "
                    "ZeroDivisionError",
        "gym_envs.errors": "ToolError",
        "decimal": "Clamped ConversionSyntax DecimalException DivisionByZero DivisionImpossible DivisionUndefined "
                   "FloatOperation Inexact InvalidContext InvalidOperation Overflow Rounded Subnormal Underflow",
        "json.decoder": "JSONDecodeError", "re": "error", "statistics": "StatisticsError",
    }),
    **_group("a method of a builtin value or container: it works on that object and its arguments only", {
        "builtins.complex": "conjugate",
        "builtins.dict": "__getitem__ clear copy fromkeys get items keys pop popitem setdefault update values",
        "builtins.float": "as_integer_ratio conjugate fromhex hex is_integer",
        "builtins.frozenset": "copy difference intersection isdisjoint issubset issuperset symmetric_difference "
                              "union",
        "builtins.int": "as_integer_ratio bit_count bit_length conjugate from_bytes",
        "builtins.list": "append clear copy count extend index insert pop remove reverse sort",
        "builtins.mappingproxy": "copy get items keys values",
        "builtins.property": "deleter getter setter",
        "builtins.set": "add clear copy difference difference_update discard intersection intersection_update "
                        "isdisjoint issubset issuperset pop remove symmetric_difference symmetric_difference_update "
                        "union update",
        "builtins.slice": "indices",
        "builtins.str": "capitalize casefold count encode endswith find index isalnum isalpha isascii isdecimal "
                        "isdigit isidentifier islower isnumeric isprintable isspace istitle isupper join lower lstrip "
                        "maketrans partition removeprefix removesuffix replace rfind rindex rpartition rsplit rstrip "
                        "split splitlines startswith strip swapcase title translate upper",
        "builtins.tuple": "count index",
    }),
    **_group("sized by a width or length argument (str.ljust(10**10)): bounded by the worker's memory limit only, "
             "as the package's threat model says", {
        "builtins.str": "center expandtabs ljust rjust zfill",
        "builtins.int": "to_bytes",
    }),
    **_group("a pure numeric function: a float, or an integer no larger than its arguments (the functions whose "
             "integer results grow with an argument's value are replaced)", {
        "math": "acos acosh asin asinh atan atan2 atanh cbrt ceil copysign cos cosh degrees dist erf erfc exp exp2 "
                "expm1 fabs floor fmod frexp fsum gamma gcd hypot isclose isfinite isinf isnan isqrt ldexp lgamma "
                "log log10 log1p log2 modf nextafter pow radians remainder sin sinh sqrt tan tanh trunc ulp",
    }),
    **_group("an operator that neither multiplies, raises to a power, shifts nor formats text (those are replaced)", {
        "_operator": "abs add and_ call concat contains countOf eq floordiv ge gt iadd iand iconcat ifloordiv "
                     "imatmul index indexOf inv invert ior irshift is_ is_not isub itruediv ixor le length_hint lt "
                     "matmul ne neg not_ or_ pos rshift sub truediv truth xor",
    }),
    **_group("a lazy iterator over its arguments: what it yields grows only with the time spent consuming it (the "
             "ones that allocate by an argument's value are replaced)", {
        "itertools": "accumulate chain combinations compress count cycle dropwhile filterfalse groupby islice "
                     "pairwise permutations starmap takewhile zip_longest",
        "itertools.chain": "from_iterable",
        "heapq": "merge",
    }),
    **_group("a container class and its methods: each instance belongs to the code that made it", {
        "collections": "ChainMap Counter OrderedDict UserDict UserList defaultdict deque namedtuple",
        "collections.ChainMap": "clear copy fromkeys get new_child parents pop popitem",
        "collections.Counter": "copy elements fromkeys most_common subtract total update",
        "collections.OrderedDict": "clear copy fromkeys items keys move_to_end pop popitem setdefault update values",
        "collections.UserDict": "copy fromkeys",
        "collections.UserList": "append clear copy count extend index insert pop remove reverse sort",
        "collections.abc.Mapping": "get items keys values",
        "collections.abc.MutableMapping": "clear pop popitem setdefault update",
        "collections.defaultdict": "copy",
        "collections.deque": "append appendleft clear copy count extend extendleft index insert pop popleft remove "
                             "reverse rotate",
        "decimal": "DecimalTuple",
        "statistics": "LinearRegression",
        "time": "struct_time",
    }),
    **_group("date and time arithmetic on the values given (what reads the clock or the host's time zone is wrapped "
             "by _getattr_)", {
        "datetime": "date datetime time timedelta timezone tzinfo",
        "datetime.date": "ctime fromisocalendar fromisoformat fromordinal isocalendar isoformat isoweekday replace "
                         "timetuple toordinal weekday",
        "datetime.datetime": "combine ctime date dst fromisoformat isoformat replace strptime time timetuple timetz "
                             "tzname utcfromtimestamp utcoffset utctimetuple",
        "datetime.time": "dst fromisoformat isoformat replace tzname utcoffset",
        "datetime.timedelta": "total_seconds",
        "datetime.timezone": "dst fromutc tzname utcoffset",
        "datetime.tzinfo": "dst fromutc tzname utcoffset",
    }),
    **_group("decimal arithmetic: it computes in the episode's own decimal context (installed around all its code) "
             "or in a context spec code made, whose precision and exponents are capped; every Decimal it can make is "
             "bounded", {
        "decimal.Context": "Etiny Etop abs add canonical clear_flags clear_traps compare compare_signal compare_total "
                           "compare_total_mag copy copy_abs copy_decimal copy_negate copy_sign create_decimal "
                           "create_decimal_from_float divide divide_int divmod exp fma is_canonical is_finite "
                           "is_infinite is_nan is_normal is_qnan is_signed is_snan is_subnormal is_zero ln log10 logb "
                           "logical_and logical_invert logical_or logical_xor max max_mag min min_mag minus multiply "
                           "next_minus next_plus next_toward normalize number_class plus power quantize radix "
                           "remainder remainder_near rotate same_quantum scaleb shift sqrt subtract to_eng_string "
                           "to_integral to_integral_exact to_integral_value to_sci_string",
        "decimal.Decimal": "adjusted as_integer_ratio as_tuple canonical compare compare_signal compare_total "
                           "compare_total_mag conjugate copy_abs copy_negate copy_sign exp fma from_float is_canonical "
                           "is_finite is_infinite is_nan is_normal is_qnan is_signed is_snan is_subnormal is_zero ln "
                           "log10 logb logical_and logical_invert logical_or logical_xor max max_mag min min_mag "
                           "next_minus next_plus next_toward normalize number_class quantize radix remainder_near "
                           "rotate same_quantum scaleb shift sqrt to_eng_string to_integral to_integral_exact "
                           "to_integral_value",
    }),
    **_group("exact fractions: bounded by the fraction they are called on (the constructor is replaced, and so are "
             "* and ** through _binop_)", {
        "fractions.Fraction": "as_integer_ratio denominator from_decimal from_float limit_denominator numerator",
        "numbers.Real": "conjugate imag real",
    }),
    **_group("a pure function of the data given: statistics, heaps, bisection, regular expressions, JSON, string "
             "helpers (the memo of compiled patterns and json's default coders are audited in test_audit.py)", {
        "statistics": "NormalDist correlation covariance geometric_mean harmonic_mean linear_regression mean median "
                      "median_grouped median_high median_low mode multimode pstdev pvariance quantiles stdev "
                      "variance",
        "statistics.NormalDist": "cdf from_samples inv_cdf mean median mode overlap pdf quantiles stdev variance "
                                 "zscore",
        "_bisect": "bisect_left bisect_right insort_left insort_right",
        "_heapq": "heapify heappop heappush heappushpop heapreplace",
        "heapq": "nlargest nsmallest",
        "re": "Match Pattern RegexFlag escape",
        "re.Match": "end expand group groupdict groups span start",
        "re.Pattern": "findall finditer fullmatch match scanner search split sub subn",
        "json": "detect_encoding load loads",
        "json.decoder": "JSONArray JSONDecoder JSONObject",
        "json.decoder.JSONDecoder": "decode raw_decode",
        "json.encoder.JSONEncoder": "default encode iterencode",
        "_json": "Scanner() scanstring",
        "string": "capwords",
    }),
    **_group("functional helpers: they call what they are given, and a cache belongs to the function it wraps "
             "(made by the episode's code, in its own globals)", {
        "_functools": "cmp_to_key reduce",
        "functools": "cache lru_cache partial partial()",
    }),
    **_group("hashing of the bytes given", {
        "_blake2": "blake2b blake2s",
        "_blake2.blake2b": "copy digest hexdigest update",
        "_blake2.blake2s": "copy digest hexdigest update",
        "_hashlib": "openssl_md5 openssl_sha1 openssl_sha224 openssl_sha256 openssl_sha384 openssl_sha3_224 "
                    "openssl_sha3_256 openssl_sha3_384 openssl_sha3_512 openssl_sha512 openssl_shake_128 "
                    "openssl_shake_256",
        "hashlib": "__hash_new file_digest",
    }),
    **_group("key derivation whose cost is its arguments' (rounds, memory): bounded by the worker's limits only, as "
             "the package's threat model says", {
        "_hashlib": "pbkdf2_hmac scrypt",
    }),
    **_group("the episode's own generator (seeded from the episode seed), or one spec code made from it", {
        "_random.Random": "random",
        "random.Random": "betavariate choice choices expovariate gammavariate gauss getstate lognormvariate "
                         "normalvariate paretovariate randint randrange sample setstate shuffle triangular uniform "
                         "vonmisesvariate weibullvariate",
    }),
}
