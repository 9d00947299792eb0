/* gym_envs._speedups: optional C versions of the executor's hot paths.
 *
 * Every function here has a pure-Python twin that stays the reference
 * implementation (gym_envs/state.py, gym_envs/executor.py); the tests run both
 * and compare results, error types and messages. When this module is missing (no
 * compiler at install time) or ENVWRIGHT_PURE_PYTHON=1 is set, the Python
 * versions run. Nothing here widens what untrusted code can do:
 *
 *   plain_json(value, max_depth)  -> (copy, size_bound)   executor.plain_json
 *   Admit(simple, need)(args)     -> private copy or None  executor._compile_arguments
 *   Statement(...)(sql, params=()) -> rows / {rowcount, lastrowid}
 *                                                         state.StateDB.statement
 *   Guard()                        what Statement, the authorizer and the progress
 *                                  handler share                 state._Guard
 *   GetAttr(fast, slow)(obj, name) the _getattr_ guard's fast path
 *                                                         executor._guarded_getattr
 *
 * The C versions never call a method that a subclass could override: they read
 * the real storage of dicts, lists and tuples and convert subclasses of str, int
 * and float with the base type's own slot, as the Python twins do.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stddef.h>
#include <time.h>
#include "structmember.h"

#define MAX_DEPTH 64          /* executor._MAX_DEPTH (the message names it, whatever max_depth is) */
#define INT_CHECK_BITS 2000   /* executor._INT_CHECK_BITS */

/* ======================================================================================= */
/* plain_json                                                                               */
/* ======================================================================================= */

static PyObject *
type_name(PyObject *v)
{
    return PyType_GetName(Py_TYPE(v));
}

static int
not_serializable(PyObject *v)
{
    PyObject *name = type_name(v);
    if (name == NULL)
        return -1;
    PyErr_Format(PyExc_TypeError, "Object of type %U is not JSON serializable", name);
    Py_DECREF(name);
    return -1;
}

static int
out_of_range(void)
{
    PyErr_SetString(PyExc_ValueError, "Out of range float values are not JSON compliant");
    return -1;
}

/* Upper bound of the JSON length of an exact int; -1 with ValueError past the digit limit. */
static Py_ssize_t
int_bound(PyObject *v)
{
    int64_t bits = (int64_t)_PyLong_NumBits(v);
    if (bits < 0 && PyErr_Occurred())
        return -1;
    if (bits > INT_CHECK_BITS) {
        PyObject *r = PyLong_Type.tp_repr(v);  /* raises the json module's ValueError past the limit */
        if (r == NULL)
            return -1;
        Py_DECREF(r);
    }
    return (Py_ssize_t)(bits / 3 + 3);
}

/* The JSON key for a non-str (or str subclass) key; executor._json_key. */
static PyObject *
json_key(PyObject *k)
{
    if (PyUnicode_Check(k))
        return PyUnicode_Type.tp_str(k);
    if (k == Py_True)
        return PyUnicode_FromString("true");
    if (k == Py_False)
        return PyUnicode_FromString("false");
    if (k == Py_None)
        return PyUnicode_FromString("null");
    if (PyLong_Check(k))
        return PyLong_Type.tp_repr(k);
    if (PyFloat_Check(k)) {
        double d = PyFloat_AS_DOUBLE(k);
        if (!isfinite(d)) {
            out_of_range();
            return NULL;
        }
        return PyFloat_Type.tp_repr(k);
    }
    PyObject *name = type_name(k);
    if (name == NULL)
        return NULL;
    PyErr_Format(PyExc_TypeError, "keys must be str, int, float, bool or None, not %U", name);
    Py_DECREF(name);
    return NULL;
}

static PyObject *plain(PyObject *v, int depth, Py_ssize_t *size);

static PyObject *
plain_items(PyObject *const *items, Py_ssize_t n, int depth, Py_ssize_t *size)
{
    PyObject *out = PyList_New(n);
    if (out == NULL)
        return NULL;
    Py_ssize_t total = 2;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t s;
        PyObject *c = plain(items[i], depth - 1, &s);
        if (c == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, i, c);
        total += s + 1;
    }
    *size = total;
    return out;
}

static PyObject *
plain(PyObject *v, int depth, Py_ssize_t *size)
{
    PyTypeObject *cls = Py_TYPE(v);
    if (cls == &PyUnicode_Type) {
        *size = 12 * PyUnicode_GET_LENGTH(v) + 2;
        return Py_NewRef(v);
    }
    if (cls == &PyLong_Type) {
        if ((*size = int_bound(v)) < 0)
            return NULL;
        return Py_NewRef(v);
    }
    if (cls == &PyBool_Type || v == Py_None) {
        *size = 5;
        return Py_NewRef(v);
    }
    if (cls == &PyFloat_Type) {
        if (!isfinite(PyFloat_AS_DOUBLE(v))) {
            out_of_range();
            return NULL;
        }
        *size = 25;
        return Py_NewRef(v);
    }
    if (depth <= 0) {
        PyErr_Format(PyExc_ValueError, "nested deeper than %d levels", MAX_DEPTH);
        return NULL;
    }
    if (PyDict_Check(v)) {
        PyObject *out = PyDict_New();
        if (out == NULL)
            return NULL;
        Py_ssize_t pos = 0, total = 2;
        PyObject *k, *item;
        Py_INCREF(v);  /* the dict cannot go away while items are converted */
        while (PyDict_Next(v, &pos, &k, &item)) {
            Py_INCREF(k);
            Py_INCREF(item);
            PyObject *key = Py_IS_TYPE(k, &PyUnicode_Type) ? Py_NewRef(k) : json_key(k);
            Py_ssize_t s = 0;
            PyObject *c = key == NULL ? NULL : plain(item, depth - 1, &s);
            Py_DECREF(k);
            Py_DECREF(item);
            if (c == NULL || PyDict_SetItem(out, key, c) < 0) {
                Py_XDECREF(key);
                Py_XDECREF(c);
                Py_DECREF(out);
                Py_DECREF(v);
                return NULL;
            }
            total += s + 12 * PyUnicode_GET_LENGTH(key) + 4;
            Py_DECREF(key);
            Py_DECREF(c);
        }
        Py_DECREF(v);
        *size = total;
        return out;
    }
    if (PyList_Check(v)) {
        /* a snapshot of the items: converting one cannot run code that resizes the list (no
         * overridden method is ever called), but the snapshot keeps that true by construction */
        PyObject *snap = PyList_GetSlice(v, 0, PyList_GET_SIZE(v));
        if (snap == NULL)
            return NULL;
        PyObject *out = plain_items(((PyListObject *)snap)->ob_item, PyList_GET_SIZE(snap), depth, size);
        Py_DECREF(snap);
        return out;
    }
    if (PyTuple_Check(v))
        return plain_items(((PyTupleObject *)v)->ob_item, PyTuple_GET_SIZE(v), depth, size);
    if (PyUnicode_Check(v)) {
        PyObject *c = PyUnicode_Type.tp_str(v);
        if (c != NULL)
            *size = 12 * PyUnicode_GET_LENGTH(c) + 2;
        return c;
    }
    if (PyLong_Check(v)) {
        PyObject *c = PyLong_Type.tp_as_number->nb_int(v);
        if (c != NULL && (*size = int_bound(c)) < 0)
            Py_CLEAR(c);
        return c;
    }
    if (PyFloat_Check(v)) {
        PyObject *f = PyFloat_Type.tp_as_number->nb_float(v);
        if (f == NULL)
            return NULL;
        PyObject *c = plain(f, depth, size);
        Py_DECREF(f);
        return c;
    }
    not_serializable(v);
    return NULL;
}

/* -2**64 < v < 2**64, as the Python twin's fast path asks */
static inline int
within_64_bits(PyObject *v)
{
    return (int64_t)_PyLong_NumBits(v) <= 64;
}

/* (copy, size), stealing copy */
static PyObject *
pair(PyObject *copy, Py_ssize_t size)
{
    PyObject *n = PyLong_FromSsize_t(size);
    PyObject *out = n == NULL ? NULL : PyTuple_Pack(2, copy, n);
    Py_DECREF(copy);
    Py_XDECREF(n);
    return out;
}

static PyObject *
plain_json(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "plain_json(value, max_depth=64)");
        return NULL;
    }
    PyObject *value = args[0];
    int max_depth = MAX_DEPTH;
    if (nargs == 2) {
        long d = PyLong_AsLong(args[1]);
        if (d == -1 && PyErr_Occurred())
            return NULL;
        if (d > 256) {  /* the C stack, not the interpreter's limit, would bound the recursion */
            PyErr_SetString(PyExc_ValueError, "plain_json: max_depth above 256 is left to the Python version");
            return NULL;
        }
        max_depth = d < 0 ? 0 : (int)d;
    }
    if (Py_IS_TYPE(value, &PyDict_Type)) {
        /* the Python twin's fast path: a flat object of str keys and str/int/bool/None values, its
         * ints within +-2**64 */
        Py_ssize_t pos = 0, chars = 0;
        PyObject *k, *v;
        int flat = 1;
        while (PyDict_Next(value, &pos, &k, &v)) {
            if (!Py_IS_TYPE(k, &PyUnicode_Type)) {
                flat = 0;
                break;
            }
            PyTypeObject *c = Py_TYPE(v);
            if (c == &PyLong_Type) {
                if (!within_64_bits(v)) {
                    flat = 0;
                    break;
                }
                chars += PyUnicode_GET_LENGTH(k);
            }
            else if (c == &PyUnicode_Type)
                chars += PyUnicode_GET_LENGTH(k) + PyUnicode_GET_LENGTH(v);
            else if (c == &PyBool_Type || v == Py_None)
                chars += PyUnicode_GET_LENGTH(k);
            else {
                flat = 0;
                break;
            }
        }
        if (flat) {
            PyObject *copy = PyDict_Copy(value);
            if (copy == NULL)
                return NULL;
            return pair(copy, 12 * chars + 27 * PyDict_GET_SIZE(value) + 2);
        }
    }
    Py_ssize_t size = 0;
    PyObject *copy = plain(value, max_depth, &size);
    if (copy == NULL)
        return NULL;
    return pair(copy, size);
}

/* ======================================================================================= */
/* Admit: the fast path of argument checking                                                */
/* ======================================================================================= */

typedef struct {
    PyObject_HEAD
    PyObject *simple;  /* dict: argument name -> tuple of exact types */
    PyObject *need;    /* tuple of required names */
    vectorcallfunc vectorcall;
} AdmitObject;

static int
admit_traverse(AdmitObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->simple);
    Py_VISIT(self->need);
    return 0;
}

static int
admit_clear(AdmitObject *self)
{
    Py_CLEAR(self->simple);
    Py_CLEAR(self->need);
    return 0;
}

static void
admit_dealloc(AdmitObject *self)
{
    PyObject_GC_UnTrack(self);
    admit_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
admit_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    AdmitObject *self = (AdmitObject *)callable;
    if (PyVectorcall_NARGS(nargsf) != 1 || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "admit(args) takes one dict");
        return NULL;
    }
    PyObject *a = args[0];
    if (!PyDict_Check(a)) {
        PyErr_SetString(PyExc_TypeError, "admit(args) takes one dict");
        return NULL;
    }
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(a, &pos, &k, &v)) {
        if (!Py_IS_TYPE(k, &PyUnicode_Type))
            Py_RETURN_NONE;
        PyObject *types = PyDict_GetItemWithError(self->simple, k);
        if (types == NULL) {
            if (PyErr_Occurred())
                return NULL;
            Py_RETURN_NONE;
        }
        PyObject *cls = (PyObject *)Py_TYPE(v);
        int found = 0;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(types); i++) {
            if (PyTuple_GET_ITEM(types, i) == cls) {
                found = 1;
                break;
            }
        }
        if (!found)
            Py_RETURN_NONE;
        if (cls == (PyObject *)&PyFloat_Type && !isfinite(PyFloat_AS_DOUBLE(v)))
            Py_RETURN_NONE;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(self->need); i++) {
        int has = PyDict_Contains(a, PyTuple_GET_ITEM(self->need, i));
        if (has < 0)
            return NULL;
        if (!has)
            Py_RETURN_NONE;
    }
    return PyDict_Copy(a);
}

static PyObject *
admit_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *simple, *need;
    if (!PyArg_ParseTuple(args, "O!O!:Admit", &PyDict_Type, &simple, &PyTuple_Type, &need))
        return NULL;
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(simple, &pos, &k, &v)) {
        if (!PyUnicode_Check(k) || !PyTuple_Check(v)) {
            PyErr_SetString(PyExc_TypeError, "Admit: simple maps str names to tuples of types");
            return NULL;
        }
    }
    AdmitObject *self = PyObject_GC_New(AdmitObject, type);
    if (self == NULL)
        return NULL;
    self->simple = PyDict_Copy(simple);
    self->need = Py_NewRef(need);
    self->vectorcall = admit_vectorcall;
    if (self->simple == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    PyObject_GC_Track(self);
    return (PyObject *)self;
}

static PyTypeObject AdmitType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gym_envs._speedups.Admit",
    .tp_doc = "Admit(simple, need)(args): a private copy of args when every argument is declared in "
              "simple with exactly one of its types (a finite float for float) and every name in need is "
              "present; None otherwise.",
    .tp_basicsize = sizeof(AdmitObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_new = admit_new,
    .tp_dealloc = (destructor)admit_dealloc,
    .tp_traverse = (traverseproc)admit_traverse,
    .tp_clear = (inquiry)admit_clear,
    .tp_vectorcall_offset = offsetof(AdmitObject, vectorcall),
    .tp_call = PyVectorcall_Call,
};

/* ======================================================================================= */
/* GetAttr: the fast path of the _getattr_ guard                                            */
/* ======================================================================================= */

typedef struct {
    PyObject_HEAD
    PyObject *fast;  /* dict: exact type -> frozenset of attribute names readable without checks */
    PyObject *slow;  /* the Python guard, for everything else */
    vectorcallfunc vectorcall;
} GetAttrObject;

static int
getattr_traverse(GetAttrObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->fast);
    Py_VISIT(self->slow);
    return 0;
}

static int
getattr_clear(GetAttrObject *self)
{
    Py_CLEAR(self->fast);
    Py_CLEAR(self->slow);
    return 0;
}

static void
getattr_dealloc(GetAttrObject *self)
{
    PyObject_GC_UnTrack(self);
    getattr_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
getattr_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    GetAttrObject *self = (GetAttrObject *)callable;
    if (PyVectorcall_NARGS(nargsf) == 2 && kwnames == NULL && PyUnicode_CheckExact(args[1])) {
        PyObject *names = PyDict_GetItemWithError(self->fast, (PyObject *)Py_TYPE(args[0]));
        if (names != NULL) {
            int ok = PySet_Contains(names, args[1]);
            if (ok < 0)
                return NULL;
            if (ok)
                return PyObject_GetAttr(args[0], args[1]);
        }
        else if (PyErr_Occurred())
            return NULL;
    }
    return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
}

static PyObject *
getattr_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *fast, *slow;
    if (!PyArg_ParseTuple(args, "O!O:GetAttr", &PyDict_Type, &fast, &slow))
        return NULL;
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(fast, &pos, &k, &v)) {
        if (!PyType_Check(k) || !PyFrozenSet_CheckExact(v)) {
            PyErr_SetString(PyExc_TypeError, "GetAttr: fast maps types to frozensets of names");
            return NULL;
        }
    }
    GetAttrObject *self = PyObject_GC_New(GetAttrObject, type);
    if (self == NULL)
        return NULL;
    self->fast = PyDict_Copy(fast);
    self->slow = Py_NewRef(slow);
    self->vectorcall = getattr_vectorcall;
    if (self->fast == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    PyObject_GC_Track(self);
    return (PyObject *)self;
}

static PyTypeObject GetAttrType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gym_envs._speedups.GetAttr",
    .tp_doc = "GetAttr(fast, slow)(obj, name): getattr(obj, name) when name is in fast[type(obj)], else "
              "slow(obj, name, ...).",
    .tp_basicsize = sizeof(GetAttrObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_new = getattr_new,
    .tp_dealloc = (destructor)getattr_dealloc,
    .tp_traverse = (traverseproc)getattr_traverse,
    .tp_clear = (inquiry)getattr_clear,
    .tp_vectorcall_offset = offsetof(GetAttrObject, vectorcall),
    .tp_call = PyVectorcall_Call,
};

/* ======================================================================================= */
/* Guard: the per-connection settings the authorizer and progress handler read             */
/* ======================================================================================= */


static PyObject *s_in_transaction,
    *s_execute, *s_description, *s_rowcount, *s_lastrowid, *s_host, *s_with, *s_transient,
    *s_aborted, *s_sql, *s_params;

typedef struct {
    PyObject_HEAD
    PyObject *mode;    /* the authorizer mode: "host", "setup", "rw" or "ro" */
    PyObject *cursor;  /* the cursor that runs untrusted statements */
    double deadline;   /* on the clock of now(); +inf when no statement runs */
    char query_only;   /* PRAGMA query_only is on */
    char episode;      /* an episode savepoint is open */
} GuardObject;

static double
monotonic(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int
guard_traverse(GuardObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->mode);
    Py_VISIT(self->cursor);
    return 0;
}

static int
guard_clear(GuardObject *self)
{
    Py_CLEAR(self->mode);
    Py_CLEAR(self->cursor);
    return 0;
}

static void
guard_dealloc(GuardObject *self)
{
    PyObject_GC_UnTrack(self);
    guard_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
guard_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    if (!PyArg_ParseTuple(args, ":Guard"))
        return NULL;
    GuardObject *self = PyObject_GC_New(GuardObject, type);
    if (self == NULL)
        return NULL;
    self->mode = Py_NewRef(s_host);
    self->cursor = Py_NewRef(Py_None);
    self->deadline = Py_HUGE_VAL;
    self->query_only = 0;
    self->episode = 0;
    PyObject_GC_Track(self);
    return (PyObject *)self;
}

static PyObject *
guard_progress(GuardObject *self, PyObject *unused)
{
    return PyLong_FromLong(monotonic() > self->deadline);
}

static PyObject *
guard_now(PyObject *self, PyObject *unused)
{
    return PyFloat_FromDouble(monotonic());
}

static PyMethodDef guard_methods[] = {
    {"progress", (PyCFunction)guard_progress, METH_NOARGS,
     "The progress handler: 1 (interrupt) once now() is past deadline, else 0."},
    {"now", guard_now, METH_NOARGS | METH_STATIC, "The clock of deadline (CLOCK_MONOTONIC, seconds)."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef guard_members[] = {
    {"mode", T_OBJECT_EX, offsetof(GuardObject, mode), 0, "the authorizer mode"},
    {"cursor", T_OBJECT_EX, offsetof(GuardObject, cursor), 0, "the cursor of untrusted statements"},
    {"deadline", T_DOUBLE, offsetof(GuardObject, deadline), 0, "when the running statement is interrupted"},
    {"query_only", T_BOOL, offsetof(GuardObject, query_only), 0, "PRAGMA query_only is on"},
    {"episode", T_BOOL, offsetof(GuardObject, episode), 0, "an episode savepoint is open"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject GuardType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gym_envs._speedups.Guard",
    .tp_doc = "Guard(): what a StateDB's authorizer and progress handler read (see state._Guard).",
    .tp_basicsize = sizeof(GuardObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = guard_new,
    .tp_dealloc = (destructor)guard_dealloc,
    .tp_traverse = (traverseproc)guard_traverse,
    .tp_clear = (inquiry)guard_clear,
    .tp_methods = guard_methods,
    .tp_members = guard_members,
};

/* ======================================================================================= */
/* Statement: db.query / db.execute                                                         */
/* ======================================================================================= */

enum {
    H_ADMIT,          /* state._admit(sql, mode) -> (sql, keyword) */
    H_CHECK_PARAMS,   /* state._check_params(params, max_vars) -> params */
    H_SET_QUERY_ONLY, /* state._set_query_only(on) */
    H_SHAPE,          /* state._shape(sql, cur) -> (small, build, cols) */
    H_ROWS,           /* state._rows(cur, build, rows) -> list */
    H_EXECUTE_WITH,   /* state._execute_with(cur, sql, params) -> dict */
    H_DROP_CURSOR,    /* state._drop_cursor() */
    H_STATE_ERROR,    /* state._state_error(exc) -> StateError */
    H_STATE_ERROR_CLS,/* StateError */
    H_DB_ERRORS,      /* (sqlite3.Error, sqlite3.Warning, MemoryError) */
    N_HOOKS
};

typedef struct {
    PyObject_HEAD
    PyObject *name;      /* "query" or "execute" */
    GuardObject *guard;  /* the StateDB's guard */
    PyObject *conn;
    PyObject *admitted;  /* dict: statement text -> keyword (this mode's cache) */
    PyObject *shapes;    /* dict: statement text -> (small, build, cols) */
    PyObject *mode;
    PyObject *cursor_type;     /* the type of the guard's cursor when this was made */
    PyObject *cursor_execute;  /* its execute method descriptor, called without a lookup per statement */
    PyObject *hooks[N_HOOKS];
    double seconds;
    Py_ssize_t max_vars;
    int fetch;
    int read_only;
    int chunk;
    vectorcallfunc vectorcall;
} StatementObject;



static int
statement_traverse(StatementObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->name);
    Py_VISIT(self->guard);
    Py_VISIT(self->conn);
    Py_VISIT(self->admitted);
    Py_VISIT(self->shapes);
    Py_VISIT(self->mode);
    Py_VISIT(self->cursor_type);
    Py_VISIT(self->cursor_execute);
    for (int i = 0; i < N_HOOKS; i++)
        Py_VISIT(self->hooks[i]);
    return 0;
}

static int
statement_clear(StatementObject *self)
{
    Py_CLEAR(self->name);
    Py_CLEAR(self->guard);
    Py_CLEAR(self->conn);
    Py_CLEAR(self->admitted);
    Py_CLEAR(self->shapes);
    Py_CLEAR(self->mode);
    Py_CLEAR(self->cursor_type);
    Py_CLEAR(self->cursor_execute);
    for (int i = 0; i < N_HOOKS; i++)
        Py_CLEAR(self->hooks[i]);
    return 0;
}

static void
statement_dealloc(StatementObject *self)
{
    PyObject_GC_UnTrack(self);
    statement_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
statement_repr(StatementObject *self)
{
    return PyUnicode_FromFormat("<db.%U>", self->name);
}

/* (sql, params=()) parsed as a Python function of that signature would, with its messages and in its
 * order: keyword errors first, then too many positional arguments, then a missing sql. */
static int
statement_args(StatementObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames,
               PyObject **sql, PyObject **params)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    *sql = nargs > 0 ? args[0] : NULL;
    *params = nargs > 1 ? args[1] : NULL;
    if (kwnames != NULL) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); i++) {
            PyObject *kw = PyTuple_GET_ITEM(kwnames, i);
            PyObject **slot;
            if (PyUnicode_Compare(kw, s_sql) == 0)
                slot = sql;
            else if (PyUnicode_Compare(kw, s_params) == 0)
                slot = params;
            else {
                if (PyErr_Occurred())
                    return -1;
                PyErr_Format(PyExc_TypeError, "db.%U() got an unexpected keyword argument '%U'", self->name, kw);
                return -1;
            }
            if (*slot != NULL) {
                PyErr_Format(PyExc_TypeError, "db.%U() got multiple values for argument '%U'", self->name, kw);
                return -1;
            }
            *slot = args[nargs + i];
        }
    }
    if (nargs > 2) {
        PyErr_Format(PyExc_TypeError, "db.%U() takes from 1 to 2 positional arguments but %zd were given",
                     self->name, nargs);
        return -1;
    }
    if (*sql == NULL) {
        PyErr_Format(PyExc_TypeError, "db.%U() missing 1 required positional argument: 'sql'", self->name);
        return -1;
    }
    return 0;
}

static inline int
exact_param(PyObject *v)
{
    PyTypeObject *c = Py_TYPE(v);
    return c == &PyUnicode_Type || c == &PyLong_Type || c == &PyFloat_Type || c == &PyBytes_Type
        || c == &PyBool_Type || v == Py_None;
}

/* The rows of a result, as dicts keyed by cols (a repeated name keeps its last value). */
static PyObject *
build_rows(PyObject *rows, PyObject *cols)
{
    Py_ssize_t n = PyList_GET_SIZE(rows), ncols = PyTuple_GET_SIZE(cols);
    PyObject *out = PyList_New(n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *row = PyList_GET_ITEM(rows, i);
        if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != ncols) {
            PyErr_SetString(PyExc_RuntimeError, "unexpected row shape");
            Py_DECREF(out);
            return NULL;
        }
        PyObject *d = PyDict_New();
        if (d == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        for (Py_ssize_t j = 0; j < ncols; j++) {
            if (PyDict_SetItem(d, PyTuple_GET_ITEM(cols, j), PyTuple_GET_ITEM(row, j)) < 0) {
                Py_DECREF(d);
                Py_DECREF(out);
                return NULL;
            }
        }
        PyList_SET_ITEM(out, i, d);
    }
    return out;
}

/* cur.execute(sql, params) with args = {cur, sql, params}: 0, or -1 with an exception */
static int
cursor_execute(StatementObject *self, PyObject **args)
{
    PyObject *r = Py_TYPE(args[0]) == (PyTypeObject *)self->cursor_type
        ? PyObject_Vectorcall(self->cursor_execute, args, 3, NULL)
        : PyObject_VectorcallMethod(s_execute, args, 3, NULL);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* The statement itself, with the cursor prepared; NULL with an exception on failure. */
static PyObject *
statement_body(StatementObject *self, PyObject *cur, PyObject *sql, PyObject *kw, PyObject *params)
{
    PyObject *callargs[3];
    if (self->fetch) {
        callargs[0] = cur;
        callargs[1] = sql;
        callargs[2] = params;
        if (cursor_execute(self, callargs) < 0)
            return NULL;
        PyObject *rows = PyList_New(0);
        if (rows == NULL)
            return NULL;
        for (int i = 0; i < self->chunk; i++) {
            PyObject *row = PyIter_Next(cur);
            if (row == NULL) {
                if (PyErr_Occurred()) {
                    Py_DECREF(rows);
                    return NULL;
                }
                break;
            }
            int rc = PyList_Append(rows, row);
            Py_DECREF(row);
            if (rc < 0) {
                Py_DECREF(rows);
                return NULL;
            }
        }
        PyObject *shape = PyDict_GetItemWithError(self->shapes, sql);
        if (shape != NULL)
            Py_INCREF(shape);
        else if (PyErr_Occurred()) {
            Py_DECREF(rows);
            return NULL;
        }
        else {
            callargs[0] = sql;
            callargs[1] = cur;
            shape = PyObject_Vectorcall(self->hooks[H_SHAPE], callargs, 2, NULL);
            if (shape == NULL) {
                Py_DECREF(rows);
                return NULL;
            }
        }
        if (!PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) != 3) {
            PyErr_SetString(PyExc_RuntimeError, "a statement shape is (small, build, cols)");
            Py_DECREF(shape);
            Py_DECREF(rows);
            return NULL;
        }
        Py_ssize_t small = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, 0));
        PyObject *out;
        if (small == -1 && PyErr_Occurred())
            out = NULL;
        else if (PyList_GET_SIZE(rows) <= small)
            out = build_rows(rows, PyTuple_GET_ITEM(shape, 2));
        else {
            callargs[0] = cur;
            callargs[1] = PyTuple_GET_ITEM(shape, 1);
            callargs[2] = rows;
            out = PyObject_Vectorcall(self->hooks[H_ROWS], callargs, 3, NULL);
        }
        Py_DECREF(shape);
        Py_DECREF(rows);
        return out;
    }
    int is_with = PyUnicode_Compare(kw, s_with);
    if (is_with == -1 && PyErr_Occurred())
        return NULL;
    if (is_with == 0) {
        callargs[0] = cur;
        callargs[1] = sql;
        callargs[2] = params;
        return PyObject_Vectorcall(self->hooks[H_EXECUTE_WITH], callargs, 3, NULL);
    }
    callargs[0] = cur;
    callargs[1] = sql;
    callargs[2] = params;
    if (cursor_execute(self, callargs) < 0)
        return NULL;
    PyObject *desc = PyObject_GetAttr(cur, s_description);
    if (desc == NULL)
        return NULL;
    int pending = desc != Py_None;  /* rows are pending (RETURNING): finish the statement now */
    Py_DECREF(desc);
    if (pending) {
        PyObject *d = PyObject_CallNoArgs(self->hooks[H_DROP_CURSOR]);
        if (d == NULL)
            return NULL;
        Py_DECREF(d);
    }
    PyObject *rowcount = PyObject_GetAttr(cur, s_rowcount);
    if (rowcount == NULL)
        return NULL;
    PyObject *lastrowid = PyObject_GetAttr(cur, s_lastrowid);
    if (lastrowid == NULL) {
        Py_DECREF(rowcount);
        return NULL;
    }
    PyObject *out = PyDict_New();
    if (out == NULL || PyDict_SetItem(out, s_rowcount, rowcount) < 0
            || PyDict_SetItem(out, s_lastrowid, lastrowid) < 0)
        Py_CLEAR(out);
    Py_DECREF(rowcount);
    Py_DECREF(lastrowid);
    return out;
}

static PyObject *
statement_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    StatementObject *self = (StatementObject *)callable;
    PyObject *sql, *params;
    if (statement_args(self, args, nargsf, kwnames, &sql, &params) < 0)
        return NULL;
    PyObject *kw = NULL, *result = NULL, *cur = NULL, *callargs[2];
    GuardObject *g = self->guard;
    Py_INCREF(sql);
    params = params == NULL ? PyTuple_New(0) : Py_NewRef(params);
    if (params == NULL)
        goto done;

    /* the statement text: a cached verdict, or the full check */
    if (Py_IS_TYPE(sql, &PyUnicode_Type)) {
        kw = PyDict_GetItemWithError(self->admitted, sql);
        if (kw != NULL)
            Py_INCREF(kw);
        else if (PyErr_Occurred())
            goto done;
    }
    if (kw == NULL) {
        callargs[0] = sql;
        callargs[1] = self->mode;
        PyObject *pair = PyObject_Vectorcall(self->hooks[H_ADMIT], callargs, 2, NULL);
        if (pair == NULL)
            goto done;
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            Py_DECREF(pair);
            PyErr_SetString(PyExc_RuntimeError, "_admit returns (sql, keyword)");
            goto done;
        }
        Py_SETREF(sql, Py_NewRef(PyTuple_GET_ITEM(pair, 0)));
        kw = Py_NewRef(PyTuple_GET_ITEM(pair, 1));
        Py_DECREF(pair);
    }

    /* the parameters: a list or tuple of exact values passes as it is */
    int plain = 0;
    if (PyList_CheckExact(params) || PyTuple_CheckExact(params)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(params);
        if (n <= self->max_vars) {
            PyObject **items = PySequence_Fast_ITEMS(params);
            plain = 1;
            for (Py_ssize_t i = 0; i < n; i++) {
                if (!exact_param(items[i])) {
                    plain = 0;
                    break;
                }
            }
        }
    }
    if (!plain) {
        PyObject *maxv = PyLong_FromSsize_t(self->max_vars);
        if (maxv == NULL)
            goto done;
        callargs[0] = params;
        callargs[1] = maxv;
        PyObject *checked = PyObject_Vectorcall(self->hooks[H_CHECK_PARAMS], callargs, 2, NULL);
        Py_DECREF(maxv);
        if (checked == NULL)
            goto done;
        Py_SETREF(params, checked);
    }

    /* the connection: the right query_only setting, an intact episode transaction */
    if (g->query_only != self->read_only) {
        PyObject *r = PyObject_CallOneArg(self->hooks[H_SET_QUERY_ONLY], self->read_only ? Py_True : Py_False);
        if (r == NULL)
            goto done;
        Py_DECREF(r);
    }
    PyObject *tx = PyObject_GetAttr(self->conn, s_in_transaction);
    if (tx == NULL)
        goto done;
    int in_tx = PyObject_IsTrue(tx);
    Py_DECREF(tx);
    if (in_tx < 0)
        goto done;
    if (!in_tx) {
        if (g->episode) {
            PyObject *kwargs = Py_BuildValue("{O:O}", s_transient, Py_True);
            if (kwargs == NULL)
                goto done;
            PyObject *msgargs = PyTuple_Pack(1, s_aborted);
            PyObject *exc = msgargs == NULL ? NULL
                : PyObject_Call(self->hooks[H_STATE_ERROR_CLS], msgargs, kwargs);
            Py_XDECREF(msgargs);
            Py_DECREF(kwargs);
            if (exc != NULL) {
                PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
                Py_DECREF(exc);
            }
            goto done;
        }
    }

    /* run it with the authorizer mode and the deadline set, both cleared whatever happens */
    cur = Py_NewRef(g->cursor);
    Py_SETREF(g->mode, Py_NewRef(self->mode));
    g->deadline = monotonic() + self->seconds;
    result = statement_body(self, cur, sql, kw, params);
    if (result == NULL) {
        /* drop the cursor (it may hold an unfinished statement); database errors become StateError */
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_NormalizeException(&type, &value, &tb);
        if (tb != NULL && value != NULL)
            PyException_SetTraceback(value, tb);
        PyObject *d = PyObject_CallNoArgs(self->hooks[H_DROP_CURSOR]);
        if (d == NULL) {  /* an error while dropping replaces the original, as in Python */
            PyObject *t2, *v2, *tb2;
            PyErr_Fetch(&t2, &v2, &tb2);
            PyErr_NormalizeException(&t2, &v2, &tb2);
            if (v2 != NULL && value != NULL)
                PyException_SetContext(v2, Py_NewRef(value));
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
            type = t2;
            value = v2;
            tb = tb2;
        }
        else {
            Py_DECREF(d);
            int db_error = value != NULL ? PyObject_IsInstance(value, self->hooks[H_DB_ERRORS]) : 0;
            if (db_error < 0) {
                Py_XDECREF(type);
                Py_XDECREF(value);
                Py_XDECREF(tb);
                goto restore;
            }
            if (db_error) {
                PyObject *err = PyObject_CallOneArg(self->hooks[H_STATE_ERROR], value);
                if (err != NULL) {  /* raise err from None */
                    PyException_SetContext(err, Py_NewRef(value));
                    PyException_SetCause(err, NULL);
                    Py_XDECREF(type);
                    Py_XDECREF(value);
                    Py_XDECREF(tb);
                    type = Py_NewRef((PyObject *)Py_TYPE(err));
                    value = err;
                    tb = NULL;
                }
                else {
                    Py_XDECREF(type);
                    Py_XDECREF(value);
                    Py_XDECREF(tb);
                    goto restore;
                }
            }
        }
        PyErr_Restore(type, value, tb);
    }
restore:
    Py_SETREF(g->mode, Py_NewRef(s_host));
    g->deadline = Py_HUGE_VAL;
    if (PyErr_Occurred())
        Py_CLEAR(result);
done:
    Py_XDECREF(cur);
    Py_XDECREF(kw);
    Py_XDECREF(params);
    Py_DECREF(sql);
    return result;
}

static PyObject *
statement_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *name, *guard, *conn, *admitted, *shapes, *mode, *hooks;
    int fetch, read_only, chunk;
    double seconds;
    Py_ssize_t max_vars;
    if (!PyArg_ParseTuple(args, "UO!OO!O!UppdniO!:Statement", &name, &GuardType, &guard, &conn, &PyDict_Type, &admitted,
                          &PyDict_Type, &shapes, &mode, &fetch, &read_only, &seconds, &max_vars, &chunk,
                          &PyTuple_Type, &hooks))
        return NULL;
    if (PyTuple_GET_SIZE(hooks) != N_HOOKS) {
        PyErr_Format(PyExc_TypeError, "Statement: hooks must hold %d items", N_HOOKS);
        return NULL;
    }
    if (chunk < 1) {
        PyErr_SetString(PyExc_ValueError, "Statement: chunk must be >= 1");
        return NULL;
    }
    StatementObject *self = PyObject_GC_New(StatementObject, type);
    if (self == NULL)
        return NULL;
    self->name = Py_NewRef(name);
    self->guard = (GuardObject *)Py_NewRef(guard);
    self->conn = Py_NewRef(conn);
    self->admitted = Py_NewRef(admitted);
    self->shapes = Py_NewRef(shapes);
    self->mode = Py_NewRef(mode);
    for (int i = 0; i < N_HOOKS; i++)
        self->hooks[i] = Py_NewRef(PyTuple_GET_ITEM(hooks, i));
    self->cursor_type = Py_NewRef((PyObject *)Py_TYPE(((GuardObject *)guard)->cursor));
    self->cursor_execute = PyObject_GetAttr(self->cursor_type, s_execute);
    self->seconds = seconds;
    self->max_vars = max_vars;
    self->fetch = fetch;
    self->read_only = read_only;
    self->chunk = chunk;
    self->vectorcall = statement_vectorcall;
    PyObject_GC_Track(self);
    if (self->cursor_execute == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static PyTypeObject StatementType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "gym_envs._speedups.Statement",
    .tp_doc = "db.query / db.execute: one statement of untrusted code (see StateDB.statement).",
    .tp_basicsize = sizeof(StatementObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_new = statement_new,
    .tp_dealloc = (destructor)statement_dealloc,
    .tp_traverse = (traverseproc)statement_traverse,
    .tp_clear = (inquiry)statement_clear,
    .tp_repr = (reprfunc)statement_repr,
    .tp_vectorcall_offset = offsetof(StatementObject, vectorcall),
    .tp_call = PyVectorcall_Call,
};

/* ======================================================================================= */
/* module                                                                                   */
/* ======================================================================================= */

static PyMethodDef methods[] = {
    {"plain_json", (PyCFunction)(void (*)(void))plain_json, METH_FASTCALL,
     "plain_json(value, max_depth=64) -> (copy, size_bound): see gym_envs.executor.plain_json."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "gym_envs._speedups",
    "Optional C versions of executor hot paths (see the file's header).", -1, methods,
};

#define INTERN(var, text) do { if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL; } while (0)

PyMODINIT_FUNC
PyInit__speedups(void)
{
    INTERN(s_in_transaction, "in_transaction");
    INTERN(s_execute, "execute");
    INTERN(s_description, "description");
    INTERN(s_rowcount, "rowcount");
    INTERN(s_lastrowid, "lastrowid");
    INTERN(s_host, "host");
    INTERN(s_with, "WITH");
    INTERN(s_transient, "transient");
    INTERN(s_sql, "sql");
    INTERN(s_params, "params");
    INTERN(s_aborted, "the episode's transaction was aborted by an earlier error; no further statements run "
                      "in this call");
    if (PyType_Ready(&AdmitType) < 0 || PyType_Ready(&GetAttrType) < 0 || PyType_Ready(&GuardType) < 0
            || PyType_Ready(&StatementType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "Admit", (PyObject *)&AdmitType) < 0
            || PyModule_AddObjectRef(m, "GetAttr", (PyObject *)&GetAttrType) < 0
            || PyModule_AddObjectRef(m, "Guard", (PyObject *)&GuardType) < 0
            || PyModule_AddObjectRef(m, "Statement", (PyObject *)&StatementType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
