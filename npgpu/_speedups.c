/* npgpu._speedups: the namespace wrappers' per-call check, in C.
 *
 * Small-array NumPy code calls cheap functions (np.where on ten elements costs NumPy about a
 * microsecond, np.zeros(10) a tenth of one). npgpu's wrapper must decide, on every call, whether
 * a call stays in NumPy; written in Python that decision alone costs 0.2-0.3 us. This module makes
 * the same decision in C. It holds no policy of its own: npgpu/_namespace.py keeps the reference
 * implementation of each wrapper in Python (used when this module is not built, or when
 * NPGPU_PURE_PYTHON is set), and tests/test_speedups.py checks both give the same results, the
 * same errors and the same counts.
 *
 * Wrapper kinds (one type, four call paths):
 *   FUNCTION     any NumPy function: small host operands go to NumPy, the rest to the dispatcher;
 *   CREATION     zeros/ones/empty/full, arange, eye/identity, linspace/logspace: the size is read
 *                off the common call forms;
 *   CONSTRUCTOR  asarray/array/...: host data is made by NumPy, and placed when large;
 *   REDUCTION    sum/prod/max/min/any/all of a small ndarray: the ufunc reduction NumPy ends in.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <limits.h>

/* NumPy's C API, for an exact ndarray's byte count without making a Python int (built against
 * NumPy >= 2.0, which is what npgpu requires at run time). */
#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#define NPY_TARGET_VERSION NPY_2_0_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL npgpu_speedups_ARRAY_API
#include <numpy/arrayobject.h>

enum { FUNCTION = 0, CREATION = 1, CONSTRUCTOR = 2, REDUCTION = 3 };
enum { SIZE_NONE = 0, SIZE_SHAPE_FIRST = 1, SIZE_ARANGE = 2, SIZE_SQUARE = 3, SIZE_NUM_THIRD = 4 };

#define MAX_PLAIN 32

/* Set once by configure(). */
static PyObject *g_state_var;        /* the ContextVar holding the State (or None) */
static PyObject *g_config_dict;      /* npgpu._config.__dict__: '_default' is the process default */
static PyTypeObject *g_ndarray;      /* numpy.ndarray, matched exactly */
static PyTypeObject *g_dtype;        /* numpy.dtype, matched with isinstance */
static PyObject *g_dispatch;         /* _dispatch.function(func, args, kwargs) */
static PyObject *g_place;            /* _dispatch.place_constructed(func, host, backend, state) */
static PyTypeObject *g_plain[MAX_PLAIN];
static int g_nplain;

static PyObject *s_fusion;
static PyObject *s_default, *s_backend, *s_host_limit, *s_create_limit, *s_nbytes, *s_num, *s_device, *s_axis,
    *s_is_host;

/* A count of small host calls, read and reset by npgpu.report() as cell[0]: incrementing a C
 * integer costs less than replacing the int in a list. */
typedef struct {
    PyObject_HEAD
    long long n;
} Counter;

static Py_ssize_t
counter_length(PyObject *self)
{
    (void)self;
    return 1;
}

static PyObject *
counter_item(PyObject *self, Py_ssize_t i)
{
    if (i != 0) {
        PyErr_SetString(PyExc_IndexError, "Counter index out of range");
        return NULL;
    }
    return PyLong_FromLongLong(((Counter *)self)->n);
}

static int
counter_ass_item(PyObject *self, Py_ssize_t i, PyObject *value)
{
    if (i != 0 || value == NULL) {
        PyErr_SetString(PyExc_IndexError, "Counter holds one item, which can't be deleted");
        return -1;
    }
    long long n = PyLong_AsLongLong(value);
    if (n == -1 && PyErr_Occurred()) {
        return -1;
    }
    ((Counter *)self)->n = n;
    return 0;
}

static PyObject *
counter_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    if ((kwds != NULL && PyDict_GET_SIZE(kwds) != 0) || PyTuple_GET_SIZE(args) != 0) {
        PyErr_SetString(PyExc_TypeError, "Counter() takes no arguments");
        return NULL;
    }
    return type->tp_alloc(type, 0);
}

static PyObject *
counter_repr(PyObject *self)
{
    return PyUnicode_FromFormat("Counter([%lld])", ((Counter *)self)->n);
}

static PySequenceMethods counter_as_sequence = {
    .sq_length = counter_length,
    .sq_item = counter_item,
    .sq_ass_item = counter_ass_item,
};

static PyTypeObject CounterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "npgpu._speedups.Counter",
    .tp_basicsize = sizeof(Counter),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Counter(): one integer cell, c[0], for npgpu.report()'s small-call counts.",
    .tp_new = counter_new,
    .tp_repr = counter_repr,
    .tp_as_sequence = &counter_as_sequence,
};

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    int kind;
    int fast;       /* FUNCTION: small host calls may skip the dispatcher */
    int size_mode;  /* CREATION: how the element count is read */
    int binds;      /* as the NumPy function does, bound as a method when stored on a class */
    PyObject *func;    /* the NumPy function */
    PyObject *impl;    /* what NumPy's own dispatch would end in (FUNCTION) */
    PyObject *routed;  /* the general wrapper of func (the other kinds' slow road) */
    PyObject *counter; /* a Counter: small host calls, read by npgpu.report() */
    PyObject *reduce;  /* REDUCTION: the bound ufunc.reduce */
    PyObject *rdtype;  /* REDUCTION: the dtype NumPy passes it (None or bool) */
    PyObject *dict;
    PyObject *weakrefs;
} Wrapper;

static inline int
is_plain(PyTypeObject *t)
{
    for (int i = 0; i < g_nplain; i++) {
        if (g_plain[i] == t) {
            return 1;
        }
    }
    return 0;
}

/* The last State read and the fields the short roads use. A State is frozen once made, so while
 * this holds a reference to it, its identity stands for its values: a call under the same State
 * (the common case, a loop of small calls) reads no attributes. */
typedef struct {
    PyObject *state;   /* strong */
    PyObject *backend; /* strong; Py_None when acceleration is off */
    long long host_limit;
    long long create_limit;
    int fusion;        /* State.fusion */
} Fields;
static Fields g_fields;

/* An int attribute of the State; -1 with an exception on error. Huge values clamp. */
static long long
state_limit(PyObject *state, PyObject *name)
{
    PyObject *value = PyObject_GetAttr(state, name);
    if (value == NULL) {
        return -1;
    }
    int overflow = 0;
    long long limit = PyLong_AsLongLongAndOverflow(value, &overflow);
    Py_DECREF(value);
    if (overflow > 0) {
        return LLONG_MAX;
    }
    if (overflow < 0) {
        return LLONG_MIN;
    }
    return limit;
}

/* The fields of the State in force here, or NULL with an exception set. Borrowed: valid until
 * the next call into Python code. */
static const Fields *
state_fields(void)
{
    PyObject *state = NULL;
    if (PyContextVar_Get(g_state_var, NULL, &state) < 0) {
        return NULL;
    }
    if (state == NULL || state == Py_None) {
        Py_XDECREF(state);
        state = PyDict_GetItemWithError(g_config_dict, s_default);
        if (state == NULL) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_RuntimeError, "npgpu._config has no _default state");
            }
            return NULL;
        }
        Py_INCREF(state);
    }
    if (state == g_fields.state) {
        Py_DECREF(state);
        return &g_fields;
    }
    PyObject *backend = PyObject_GetAttr(state, s_backend);
    if (backend == NULL) {
        Py_DECREF(state);
        return NULL;
    }
    long long host_limit = state_limit(state, s_host_limit);
    long long create_limit = host_limit == -1 && PyErr_Occurred() ? -1 : state_limit(state, s_create_limit);
    PyObject *fusion_value = create_limit == -1 && PyErr_Occurred() ? NULL : PyObject_GetAttr(state, s_fusion);
    int fusion = fusion_value == NULL ? -1 : PyObject_IsTrue(fusion_value);
    Py_XDECREF(fusion_value);
    if (fusion < 0) {
        Py_DECREF(backend);
        Py_DECREF(state);
        return NULL;
    }
    PyObject *old_state = g_fields.state, *old_backend = g_fields.backend;
    g_fields.state = state;
    g_fields.backend = backend;
    g_fields.host_limit = host_limit;
    g_fields.create_limit = create_limit;
    g_fields.fusion = fusion;
    Py_XDECREF(old_backend);
    Py_XDECREF(old_state);
    return &g_fields;
}

/* nbytes of an ndarray: exact ndarrays (the host_bytes scan, the constructors' results) through
 * NumPy's C API; anything else through its attribute. -2 with an exception on error. */
static long long
array_nbytes(PyObject *array)
{
    if (Py_TYPE(array) == &PyArray_Type) {
        return (long long)PyArray_NBYTES((PyArrayObject *)array);
    }
    PyObject *value = PyObject_GetAttr(array, s_nbytes);
    if (value == NULL) {
        return -2;
    }
    long long n = PyLong_AsLongLong(value);
    Py_DECREF(value);
    if (n == -1 && PyErr_Occurred()) {
        return -2;
    }
    return n;
}

/* Bytes of the NumPy arrays among items (and in lists or tuples of them); -1 when anything else
 * is there (a device array, an unknown type): the dispatcher decides; -2 on error. A list or
 * tuple whose first item is a plain value holds data or a shape, not operands. */
static long long
host_bytes(PyObject *const *items, Py_ssize_t n)
{
    long long total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = items[i];
        PyTypeObject *t = Py_TYPE(x);
        if (t == g_ndarray) {
            long long b = array_nbytes(x);
            if (b < 0) {
                return -2;
            }
            total += b;
        }
        else if (is_plain(t)) {
            continue;
        }
        else if (t == &PyTuple_Type || t == &PyList_Type) {
            if (PySequence_Fast_GET_SIZE(x) == 0 || is_plain(Py_TYPE(PySequence_Fast_GET_ITEM(x, 0)))) {
                continue;
            }
            /* reading nbytes of an exact ndarray runs no Python code: the list can't change */
            for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(x); j++) {
                PyObject *item = PySequence_Fast_GET_ITEM(x, j);
                PyTypeObject *it = Py_TYPE(item);
                if (it == g_ndarray) {
                    long long b = array_nbytes(item);
                    if (b < 0) {
                        return -2;
                    }
                    total += b;
                }
                else if (!is_plain(it)) {
                    return -1;
                }
            }
        }
        else if (PyObject_TypeCheck(x, g_dtype)) {
            continue;
        }
        else {
            return -1;
        }
    }
    return total;
}

/* THE small-call predicate (the Python twin: npgpu/_namespace.py, small_host_call): 1 when the
 * items are host data whose arrays stay below limit bytes (NumPy runs the call at once), 0 when
 * not, -1 on error. */
static int
small_host_call(PyObject *const *items, Py_ssize_t n, long long limit)
{
    long long nbytes = host_bytes(items, n);
    if (nbytes == -2) {
        return -1;
    }
    return nbytes >= 0 && nbytes < limit;
}

static int
count_small_call(Wrapper *self)
{
    ((Counter *)self->counter)->n++;
    return 0;
}

/* func(args, kwargs) for the dispatcher's (func, args tuple, kwargs dict) signature. */
static PyObject *
call_dispatcher(PyObject *func, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *tuple = PyTuple_New(nargs);
    if (tuple == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        Py_INCREF(args[i]);
        PyTuple_SET_ITEM(tuple, i, args[i]);
    }
    PyObject *kwargs = PyDict_New();
    if (kwargs == NULL) {
        Py_DECREF(tuple);
        return NULL;
    }
    if (kwnames != NULL) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); i++) {
            if (PyDict_SetItem(kwargs, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0) {
                Py_DECREF(tuple);
                Py_DECREF(kwargs);
                return NULL;
            }
        }
    }
    PyObject *result = PyObject_CallFunctionObjArgs(g_dispatch, func, tuple, kwargs, NULL);
    Py_DECREF(tuple);
    Py_DECREF(kwargs);
    return result;
}

/* Whether a call names device= (the array API's placement, which the dispatcher decides). */
static int
names_device(PyObject *kwnames)
{
    if (kwnames == NULL) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); i++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, i);
        if (name == s_device || PyUnicode_Compare(name, s_device) == 0) {
            return 1;
        }
    }
    return 0;
}

static PyObject *
function_call(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Wrapper *self = (Wrapper *)op;
    const Fields *fields = state_fields();
    if (fields == NULL) {
        return NULL;
    }
    if (fields->backend == Py_None) {
        return PyObject_Vectorcall(self->func, args, nargsf, kwnames);
    }
    if (self->fast && !names_device(kwnames)) {
        Py_ssize_t n = PyVectorcall_NARGS(nargsf) + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
        int small = small_host_call(args, n, fields->host_limit);
        if (small < 0) {
            return NULL;
        }
        if (small) {
            if (count_small_call(self) < 0) {
                return NULL;
            }
            return PyObject_Vectorcall(self->impl, args, nargsf, kwnames);
        }
    }
    return call_dispatcher(self->func, args, nargsf, kwnames);
}

/* An exact Python int as long long; 0 with *ok = 0 when x isn't one or doesn't fit. */
static long long
exact_int(PyObject *x, int *ok)
{
    if (Py_TYPE(x) != &PyLong_Type) {
        *ok = 0;
        return 0;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(x, &overflow);
    if (overflow || (v == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        *ok = 0;
        return 0;
    }
    return v;
}

static long long
floor_div(long long a, long long b)
{
    long long q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) {
        q -= 1;
    }
    return q;
}

/* Elements a creation call asks for, read off its common forms; -1 when it can't be read. */
static long long
creation_size(Wrapper *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    int ok = 1;
    if (nargs == 0) {
        return -1;
    }
    PyObject *first = args[0];
    switch (self->size_mode) {
    case SIZE_SHAPE_FIRST:
        if (Py_TYPE(first) == &PyLong_Type) {
            long long n = exact_int(first, &ok);
            return ok ? n : -1;
        }
        if (Py_TYPE(first) == &PyTuple_Type) {
            long long n = 1;
            for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(first); i++) {
                long long d = exact_int(PyTuple_GET_ITEM(first, i), &ok);
                if (!ok || __builtin_mul_overflow(n, d, &n)) {
                    return -1;
                }
            }
            return n;
        }
        return -1;
    case SIZE_ARANGE: {
        if (nargs > 3) {
            return -1;
        }
        long long v[3] = {0, 0, 1};
        for (Py_ssize_t i = 0; i < nargs; i++) {
            v[i] = exact_int(args[i], &ok);
            if (!ok) {
                return -1;
            }
        }
        if (nargs == 1) {
            return v[0];
        }
        long long diff;
        if (v[2] == 0 || __builtin_sub_overflow(v[0], v[1], &diff) || (diff == LLONG_MIN && v[2] == -1)) {
            return -1;
        }
        long long n = -floor_div(diff, v[2]); /* ceil((stop - start) / step) */
        return n > 0 ? n : 0;
    }
    case SIZE_SQUARE: {
        long long n = exact_int(first, &ok), n2;
        if (nargs != 1 || !ok || __builtin_mul_overflow(n, n, &n2)) {
            return -1;
        }
        return n2;
    }
    case SIZE_NUM_THIRD: {
        PyObject *num = NULL;
        if (nargs > 2) {
            num = args[2];
        }
        else if (kwnames != NULL) {
            for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); i++) {
                if (PyUnicode_Compare(PyTuple_GET_ITEM(kwnames, i), s_num) == 0) {
                    num = args[nargs + i];
                    break;
                }
            }
        }
        if (num == NULL) {
            return 50; /* linspace's and logspace's default */
        }
        long long n = exact_int(num, &ok);
        return ok ? n : -1;
    }
    default:
        return -1;
    }
}

static PyObject *
creation_call(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Wrapper *self = (Wrapper *)op;
    const Fields *fields = state_fields();
    if (fields == NULL) {
        return NULL;
    }
    if (fields->backend == Py_None) {
        return PyObject_Vectorcall(self->func, args, nargsf, kwnames);
    }
    long long n = creation_size(self, args, PyVectorcall_NARGS(nargsf), kwnames);
    if (n >= 0 && n <= LLONG_MAX / 8 && n * 8 < fields->create_limit && !names_device(kwnames)) {
        if (count_small_call(self) < 0) {
            return NULL;
        }
        return PyObject_Vectorcall(self->func, args, nargsf, kwnames);
    }
    return PyObject_Vectorcall(self->routed, args, nargsf, kwnames);
}

static PyObject *
constructor_call(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Wrapper *self = (Wrapper *)op;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    const Fields *fields = state_fields();
    if (fields == NULL) {
        return NULL;
    }
    if (fields->backend == Py_None || nargs == 0) {
        return PyObject_Vectorcall(self->func, args, nargsf, kwnames);
    }
    /* Held here: the calls below run Python code, which may read another State. */
    PyObject *state = fields->state, *backend = fields->backend;
    long long limit = fields->host_limit;
    Py_INCREF(state);
    Py_INCREF(backend);
    PyObject *result = NULL;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    if (names_device(kwnames)) {
        goto routed;
    }
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *value = args[nargs + i];
        if (!is_plain(Py_TYPE(value)) && !PyObject_TypeCheck(value, g_dtype)) {
            goto routed;
        }
    }
    PyObject *data = args[0];
    PyTypeObject *t = Py_TYPE(data);
    if (t == g_ndarray) {
        int small = small_host_call(&data, 1, limit);
        if (small < 0) {
            goto done;
        }
        if (small) {
            if (count_small_call(self) == 0) {
                result = PyObject_Vectorcall(self->func, args, nargsf, kwnames);
            }
            goto done;
        }
        goto routed;
    }
    if ((t == &PyList_Type || t == &PyTuple_Type)
            ? (PySequence_Fast_GET_SIZE(data) == 0 || is_plain(Py_TYPE(PySequence_Fast_GET_ITEM(data, 0))))
            : is_plain(t)) {
        PyObject *host = PyObject_Vectorcall(self->func, args, nargsf, kwnames);
        if (host == NULL) {
            goto done;
        }
        int small = Py_TYPE(host) != g_ndarray ? 1 : small_host_call(&host, 1, limit);
        if (small < 0) {
            Py_DECREF(host);
            goto done;
        }
        if (!small) {
            PyObject *is_host = PyObject_GetAttr(backend, s_is_host);
            small = is_host == NULL ? -1 : PyObject_IsTrue(is_host);
            Py_XDECREF(is_host);
            if (small < 0) {
                Py_DECREF(host);
                goto done;
            }
        }
        if (small) {
            if (count_small_call(self) < 0) {
                Py_DECREF(host);
                goto done;
            }
            result = host;
        }
        else {
            result = PyObject_CallFunctionObjArgs(g_place, self->func, host, backend, state, NULL);
            Py_DECREF(host);
        }
        goto done;
    }
routed:
    result = PyObject_Vectorcall(self->routed, args, nargsf, kwnames);
done:
    Py_DECREF(state);
    Py_DECREF(backend);
    return result;
}

/* An axis the short road passes to ufunc.reduce as NumPy's function would: None, an exact int, or a
 * tuple of exact ints (resnet's per-pixel sums over axis=(1, 2, 3)). */
static int
plain_axis(PyObject *axis)
{
    if (axis == Py_None || Py_TYPE(axis) == &PyLong_Type) {
        return 1;
    }
    if (Py_TYPE(axis) != &PyTuple_Type) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(axis); i++) {
        if (Py_TYPE(PyTuple_GET_ITEM(axis, i)) != &PyLong_Type) {
            return 0;
        }
    }
    return 1;
}

static PyObject *
reduction_call(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Wrapper *self = (Wrapper *)op;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject *axis = Py_None;
    if (nargs == 1 && nkw == 1) {
        if (PyUnicode_Compare(PyTuple_GET_ITEM(kwnames, 0), s_axis) != 0) {
            goto routed;
        }
        axis = args[1];
    }
    else if (nargs == 2 && nkw == 0) {
        axis = args[1];
    }
    else if (nargs != 1 || nkw != 0) {
        goto routed;
    }
    if (!plain_axis(axis) || Py_TYPE(args[0]) != g_ndarray) {
        goto routed;
    }
    const Fields *fields = state_fields();
    if (fields == NULL) {
        return NULL;
    }
    if (fields->backend != Py_None) {
        int small = small_host_call(args, 1, fields->host_limit);
        if (small < 0) {
            return NULL;
        }
        if (small) {
            if (count_small_call(self) < 0) {
                return NULL;
            }
            PyObject *call[3] = {args[0], axis, self->rdtype};
            return PyObject_Vectorcall(self->reduce, call, 3, NULL);
        }
    }
routed:
    return PyObject_Vectorcall(self->routed, args, nargsf, kwnames);
}

static PyObject *
wrapper_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *keywords[] = {"kind", "func", "impl", "routed", "counter", "fast", "size_mode", "reduce",
                               "rdtype", NULL};
    int kind, fast = 1, size_mode = SIZE_NONE;
    PyObject *func, *impl, *routed, *counter, *reduce = Py_None, *rdtype = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "iOOOO!|iiOO:Wrapper", keywords, &kind, &func, &impl, &routed,
                                     &CounterType, &counter, &fast, &size_mode, &reduce, &rdtype)) {
        return NULL;
    }
    if (kind < FUNCTION || kind > REDUCTION) {
        PyErr_SetString(PyExc_ValueError, "Wrapper: unknown kind");
        return NULL;
    }
    if (g_state_var == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "npgpu._speedups.configure() was not called");
        return NULL;
    }
    Wrapper *self = (Wrapper *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    /* each kind's call path is the vectorcall itself: no switch per call */
    static const vectorcallfunc paths[] = {function_call, creation_call, constructor_call, reduction_call};
    self->vectorcall = paths[kind];
    self->kind = kind;
    self->fast = fast;
    self->size_mode = size_mode;
    /* np.array and np.zeros are C functions, which a class attribute does not bind (class T: array =
       np.array; self.array([1, 2])); NumPy's dispatched functions bind, as Python functions do */
    self->binds = Py_TYPE(func)->tp_descr_get != NULL;
    self->func = Py_NewRef(func);
    self->impl = Py_NewRef(impl);
    self->routed = Py_NewRef(routed);
    self->counter = Py_NewRef(counter);
    self->reduce = Py_NewRef(reduce);
    self->rdtype = Py_NewRef(rdtype);
    return (PyObject *)self;
}

static int
wrapper_traverse(Wrapper *self, visitproc visit, void *arg)
{
    Py_VISIT(self->func);
    Py_VISIT(self->impl);
    Py_VISIT(self->routed);
    Py_VISIT(self->counter);
    Py_VISIT(self->reduce);
    Py_VISIT(self->rdtype);
    Py_VISIT(self->dict);
    return 0;
}

static int
wrapper_clear(Wrapper *self)
{
    Py_CLEAR(self->func);
    Py_CLEAR(self->impl);
    Py_CLEAR(self->routed);
    Py_CLEAR(self->counter);
    Py_CLEAR(self->reduce);
    Py_CLEAR(self->rdtype);
    Py_CLEAR(self->dict);
    return 0;
}

static void
wrapper_dealloc(Wrapper *self)
{
    PyObject_GC_UnTrack(self);
    if (self->weakrefs != NULL) {
        PyObject_ClearWeakRefs((PyObject *)self);
    }
    wrapper_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Bound as a method when stored on a class, as Python functions and NumPy's functions are. */
static PyObject *
wrapper_descr_get(PyObject *self, PyObject *obj, PyObject *type)
{
    (void)type;
    if (obj == NULL || obj == Py_None) {
        return Py_NewRef(self);
    }
    return PyMethod_New(self, obj);
}

/* A Wrapper binds where its NumPy function does (not np.array's: a C function). */
static PyObject *
wrapper_function_descr_get(PyObject *self, PyObject *obj, PyObject *type)
{
    if (!((Wrapper *)self)->binds) {
        return Py_NewRef(self);
    }
    return wrapper_descr_get(self, obj, type);
}

static PyObject *
wrapper_repr(Wrapper *self)
{
    PyObject *name = self->dict ? PyDict_GetItemString(self->dict, "__qualname__") : NULL;
    if (name == NULL) {
        return PyUnicode_FromFormat("<npgpu function at %p>", self);
    }
    return PyUnicode_FromFormat("<function %U at %p>", name, self);
}

/* Pickled by reference, like a function: its module and qualified name. */
static PyObject *
wrapper_reduce(Wrapper *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *name = self->dict ? PyDict_GetItemString(self->dict, "__qualname__") : NULL;
    if (name == NULL) {
        PyErr_SetString(PyExc_TypeError, "cannot pickle an unnamed npgpu wrapper");
        return NULL;
    }
    return Py_NewRef(name);
}

static PyMethodDef wrapper_methods[] = {
    {"__reduce__", (PyCFunction)wrapper_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef wrapper_members[] = {
    {"_counter", T_OBJECT, offsetof(Wrapper, counter), READONLY, "small host calls (a Counter)"},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef wrapper_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject WrapperType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "npgpu._speedups.Wrapper",
    .tp_doc = "npgpu's face of one NumPy function, with the small-call check in C.",
    .tp_basicsize = sizeof(Wrapper),
    /* (not a method descriptor: a call through an instance must ask tp_descr_get, which binds only
       where the NumPy function binds) */
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_new = wrapper_new,
    .tp_traverse = (traverseproc)wrapper_traverse,
    .tp_clear = (inquiry)wrapper_clear,
    .tp_dealloc = (destructor)wrapper_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Wrapper, vectorcall),
    .tp_dictoffset = offsetof(Wrapper, dict),
    .tp_weaklistoffset = offsetof(Wrapper, weakrefs),
    .tp_descr_get = wrapper_function_descr_get,
    .tp_repr = (reprfunc)wrapper_repr,
    .tp_methods = wrapper_methods,
    .tp_members = wrapper_members,
    .tp_getset = wrapper_getset,
};

static PyObject *
configure(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *state_var, *config_dict, *ndarray, *dtype, *plain, *dispatch, *place;
    if (!PyArg_ParseTuple(args, "O!O!O!O!OOO:configure", &PyContextVar_Type, &state_var, &PyDict_Type,
                          &config_dict, &PyType_Type, &ndarray, &PyType_Type, &dtype, &plain, &dispatch, &place)) {
        return NULL;
    }
    PyObject *seq = PySequence_Fast(plain, "configure: plain types must be iterable");
    if (seq == NULL) {
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > MAX_PLAIN) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "configure: too many plain types");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyType_Check(t)) {
            Py_DECREF(seq);
            PyErr_SetString(PyExc_TypeError, "configure: plain types must be types");
            return NULL;
        }
    }
    for (int i = 0; i < g_nplain; i++) {
        Py_CLEAR(g_plain[i]);
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        g_plain[i] = (PyTypeObject *)Py_NewRef(PySequence_Fast_GET_ITEM(seq, i));
    }
    g_nplain = (int)n;
    Py_DECREF(seq);
    Py_XSETREF(g_state_var, Py_NewRef(state_var));
    Py_XSETREF(g_config_dict, Py_NewRef(config_dict));
    Py_XSETREF(g_ndarray, (PyTypeObject *)Py_NewRef(ndarray));
    Py_XSETREF(g_dtype, (PyTypeObject *)Py_NewRef(dtype));
    Py_XSETREF(g_dispatch, Py_NewRef(dispatch));
    Py_XSETREF(g_place, Py_NewRef(place));
    Py_CLEAR(g_fields.state);
    Py_CLEAR(g_fields.backend);
    Py_RETURN_NONE;
}

/* ---------------------------------------------------------------------------------------------
 * The fusion recorder's hot paths (npgpu/fusion/lazy.py): record_binary, record_unary and the
 * graph walk, in C. Each mirrors the Python function of the same name line for line; lazy.py
 * keeps those as the reference and the fallback, and tests/test_speedups.py checks that both
 * record the same graphs. The objects are lazy.py's own (DeviceArray, Pending, ScalarArg: Python
 * classes with __slots__), read and written here through their slots' offsets.
 * ------------------------------------------------------------------------------------------- */

static PyTypeObject *r_array, *r_pending, *r_scalar_arg, *r_ref;
static PyObject *r_forget;       /* the one weakref callback: _PendingArrays._refs.discard */
static PyObject *r_refs;         /* _PendingArrays._refs: a set of _Ref */
static PyObject *r_lazy_globals; /* lazy.py's globals: MAX_NODES is read per call (tests change it) */
static PyObject *r_materialize;  /* lazy.materialize */
static PyObject *r_zero, *r_one;
static PyObject *s_max_nodes, *s_recorded_scalars, *s_dtype, *s_shape, *s_nin, *s_type, *s_input, *s_scalar, *s_f_code, *s_f_lasti;

enum { A_DATA, A_PENDING, A_BACKEND, A_BASE, A_READONLY, A_VIEWS, A_COUNT };
enum { P_UFUNC, P_LOOP, P_OPERANDS, P_SHAPE, P_DTYPE, P_NODES, P_CONSUMERS, P_CODE, P_LASTI, P_ERRSTATE, P_COUNT };
static Py_ssize_t off_array[A_COUNT], off_pending[P_COUNT], off_value, off_owner;

#define SLOT(obj, off) (*(PyObject **)((char *)(obj) + (off)))

/* Store a new reference to value in a slot. */
static inline void
set_slot(PyObject *obj, Py_ssize_t off, PyObject *value)
{
    Py_XSETREF(SLOT(obj, off), Py_NewRef(value));
}

static int
slot_offset(PyTypeObject *type, const char *name, Py_ssize_t *out)
{
    PyObject *descr = PyDict_GetItemString(type->tp_dict, name);
    if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type) ||
        ((PyMemberDescrObject *)descr)->d_member->type != T_OBJECT_EX) {
        PyErr_Format(PyExc_TypeError, "%s has no __slots__ entry %s", type->tp_name, name);
        return -1;
    }
    *out = ((PyMemberDescrObject *)descr)->d_member->offset;
    return 0;
}

static PyObject *
configure_fusion(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *array, *pending, *scalar_arg, *ref, *forget, *refs, *globals, *materialize;
    if (!PyArg_ParseTuple(args, "O!O!O!O!OO!O!O:configure_fusion", &PyType_Type, &array, &PyType_Type, &pending,
                          &PyType_Type, &scalar_arg, &PyType_Type, &ref, &forget, &PySet_Type, &refs,
                          &PyDict_Type, &globals, &materialize)) {
        return NULL;
    }
    static const char *array_slots[A_COUNT] = {"_device_data", "_pending", "_backend", "_base", "_readonly",
                                               "_views"};
    static const char *pending_slots[P_COUNT] = {"ufunc", "loop", "operands", "shape", "dtype",
                                                 "nodes", "consumers", "code", "lasti", "errstate"};
    for (int i = 0; i < A_COUNT; i++) {
        if (slot_offset((PyTypeObject *)array, array_slots[i], &off_array[i]) < 0) {
            return NULL;
        }
    }
    for (int i = 0; i < P_COUNT; i++) {
        if (slot_offset((PyTypeObject *)pending, pending_slots[i], &off_pending[i]) < 0) {
            return NULL;
        }
    }
    if (slot_offset((PyTypeObject *)scalar_arg, "value", &off_value) < 0 ||
        slot_offset((PyTypeObject *)ref, "owner", &off_owner) < 0) {
        return NULL;
    }
    Py_XSETREF(r_array, (PyTypeObject *)Py_NewRef(array));
    Py_XSETREF(r_pending, (PyTypeObject *)Py_NewRef(pending));
    Py_XSETREF(r_scalar_arg, (PyTypeObject *)Py_NewRef(scalar_arg));
    Py_XSETREF(r_ref, (PyTypeObject *)Py_NewRef(ref));
    Py_XSETREF(r_forget, Py_NewRef(forget));
    Py_XSETREF(r_refs, Py_NewRef(refs));
    Py_XSETREF(r_lazy_globals, Py_NewRef(globals));
    Py_XSETREF(r_materialize, Py_NewRef(materialize));
    Py_RETURN_NONE;
}

/* A slot that Python code always sets; NULL with AttributeError when it isn't. */
static PyObject *
get_slot(PyObject *obj, Py_ssize_t off, const char *name)
{
    PyObject *value = SLOT(obj, off);
    if (value == NULL) {
        PyErr_Format(PyExc_AttributeError, "'%s' object has no attribute '%s'", Py_TYPE(obj)->tp_name, name);
    }
    return value;
}

static long
long_slot(PyObject *obj, Py_ssize_t off, const char *name)
{
    PyObject *value = get_slot(obj, off, name);
    return value == NULL ? -1 : PyLong_AsLong(value);
}

/* MAX_NODES as lazy.py has it now; -1 with an exception on error. */
static long
max_nodes(void)
{
    PyObject *value = PyDict_GetItemWithError(r_lazy_globals, s_max_nodes);
    if (value == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_RuntimeError, "lazy.MAX_NODES is missing");
        }
        return -1;
    }
    return PyLong_AsLong(value);
}

/* Whether y is a scalar record_binary takes: a Python float, or a NumPy scalar of the recorder's
 * RECORDED_SCALARS (the Python twin's set, read per call as MAX_NODES is); -1 with an exception. */
static int
recorded_scalar(PyObject *y)
{
    if (Py_IS_TYPE(y, &PyFloat_Type)) {
        return 1;
    }
    if (!PyArray_CheckAnyScalarExact(y)) {
        return 0;
    }
    PyObject *types = PyDict_GetItemWithError(r_lazy_globals, s_recorded_scalars);
    if (types == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_RuntimeError, "lazy.recorder.RECORDED_SCALARS is missing");
        }
        return -1;
    }
    return PySet_Contains(types, (PyObject *)Py_TYPE(y));
}

/* NumPy's errstate for a recording (npgpu/_fperr.py): the C recorder takes a call only where the
 * errstate is the one _fperr.CACHE[0] holds (the last seen that needs no immediate answer); its
 * ErrState is what the Pending records. Anything else goes to the Python recorder, which learns. */
static PyObject *r_errstate_var;   /* numpy._core.umath._extobj_contextvar */
static PyObject *r_errstate_cache; /* _fperr.CACHE: item 0 is (context value, ErrState, filters, two hooks) */
static PyObject *r_warnings_dict;  /* the warnings module's __dict__ (its filters and display hooks) */
static const char *warning_names[3] = {"filters", "_showwarnmsg_impl", "showwarning"};

static PyObject *
configure_errstate(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *var, *cache, *wdict;
    if (!PyArg_ParseTuple(args, "OO!O!:configure_errstate", &var, &PyList_Type, &cache, &PyDict_Type, &wdict)) {
        return NULL;
    }
    if (!PyContextVar_CheckExact(var)) {
        PyErr_SetString(PyExc_TypeError, "configure_errstate: NumPy's errstate is not a context variable");
        return NULL;
    }
    Py_XSETREF(r_errstate_var, Py_NewRef(var));
    Py_XSETREF(r_errstate_cache, Py_NewRef(cache));
    Py_XSETREF(r_warnings_dict, Py_NewRef(wdict));
    Py_RETURN_NONE;
}

/* The ErrState to record (a new reference) in *state, or NULL there when the Python recorder must
 * decide; -1 with an exception on error. */
static int
recorded_errstate(PyObject **state)
{
    *state = NULL;
    if (r_errstate_var == NULL || r_errstate_cache == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "npgpu._speedups.configure_errstate() was not called");
        return -1;
    }
    PyObject *value;
    if (PyContextVar_Get(r_errstate_var, NULL, &value) < 0) {
        return -1;
    }
    if (PyList_GET_SIZE(r_errstate_cache) > 0) {
        PyObject *entry = PyList_GET_ITEM(r_errstate_cache, 0);
        if (PyTuple_Check(entry) && PyTuple_GET_SIZE(entry) == 5 && PyTuple_GET_ITEM(entry, 0) == value) {
            int same = 1;  /* and the warning machinery the ErrState holds is the one in force */
            for (int i = 0; i < 3 && same; i++) {
                PyObject *now = PyDict_GetItemString(r_warnings_dict, warning_names[i]);  /* borrowed */
                same = now == PyTuple_GET_ITEM(entry, 2 + i);
            }
            if (same) {
                *state = Py_NewRef(PyTuple_GET_ITEM(entry, 1));
            }
        }
    }
    Py_XDECREF(value);
    return 0;
}

/* A new Pending: Pending.__init__ of lazy.py. */
static PyObject *
new_pending(PyObject *ufunc, PyObject *loop, PyObject *operands, PyObject *shape, long nodes, PyObject *frame,
            PyObject *errstate)
{
    /* loop[ufunc.nin]: fusible ufuncs have one output, so it is the loop's last dtype */
    PyObject *dtype;
    if (PyTuple_CheckExact(loop) && PyTuple_GET_SIZE(loop) > 0) {
        dtype = Py_NewRef(PyTuple_GET_ITEM(loop, PyTuple_GET_SIZE(loop) - 1));
    }
    else {
        PyObject *nin = PyObject_GetAttr(ufunc, s_nin);
        dtype = nin == NULL ? NULL : PyObject_GetItem(loop, nin);
        Py_XDECREF(nin);
        if (dtype == NULL) {
            return NULL;
        }
    }
    PyObject *p = r_pending->tp_alloc(r_pending, 0);
    PyObject *n = PyLong_FromLong(nodes);
    if (p == NULL || n == NULL) {
        Py_XDECREF(p);
        Py_XDECREF(n);
        Py_DECREF(dtype);
        return NULL;
    }
    set_slot(p, off_pending[P_UFUNC], ufunc);
    set_slot(p, off_pending[P_LOOP], loop);
    set_slot(p, off_pending[P_OPERANDS], operands);
    set_slot(p, off_pending[P_SHAPE], shape);
    Py_XSETREF(SLOT(p, off_pending[P_DTYPE]), dtype);
    Py_XSETREF(SLOT(p, off_pending[P_NODES]), n);
    set_slot(p, off_pending[P_CONSUMERS], r_zero);
    set_slot(p, off_pending[P_ERRSTATE], errstate);
    if (frame == Py_None) {
        set_slot(p, off_pending[P_CODE], Py_None);
        set_slot(p, off_pending[P_LASTI], r_zero);
        return p;
    }
    PyObject *code, *lasti;
#if PY_VERSION_HEX >= 0x030B0000
    if (PyFrame_Check(frame)) {
        code = (PyObject *)PyFrame_GetCode((PyFrameObject *)frame);
        lasti = PyLong_FromLong(PyFrame_GetLasti((PyFrameObject *)frame));
    }
    else
#endif
    {
        code = PyObject_GetAttr(frame, s_f_code);
        lasti = code == NULL ? NULL : PyObject_GetAttr(frame, s_f_lasti);
    }
    if (lasti == NULL) {
        Py_XDECREF(code);
        Py_DECREF(p);
        return NULL;
    }
    Py_XSETREF(SLOT(p, off_pending[P_CODE]), code);
    Py_XSETREF(SLOT(p, off_pending[P_LASTI]), lasti);
    return p;
}

/* _new_pending of lazy.py: a device array whose value is pending (stolen), registered. */
static PyObject *
new_pending_array(PyObject *pending, PyObject *backend)
{
    PyObject *array = r_array->tp_alloc(r_array, 0);
    if (array == NULL) {
        Py_DECREF(pending);
        return NULL;
    }
    set_slot(array, off_array[A_DATA], Py_None);
    Py_XSETREF(SLOT(array, off_array[A_PENDING]), pending);
    set_slot(array, off_array[A_BACKEND], backend);
    set_slot(array, off_array[A_BASE], Py_None); /* a fresh result: owns its memory, writeable */
    set_slot(array, off_array[A_READONLY], Py_False);
    set_slot(array, off_array[A_VIEWS], Py_None);
    PyObject *ref_args[2] = {array, r_forget};
    PyObject *ref = PyObject_Vectorcall((PyObject *)r_ref, ref_args, 2, NULL);
    /* the recording thread, as threading.get_ident() says it: npgpu.sync() runs its own thread's */
    PyObject *owner = PyLong_FromUnsignedLong(PyThread_get_thread_ident());
    if (ref == NULL || owner == NULL || (set_slot(ref, off_owner, owner), PySet_Add(r_refs, ref) < 0)) {
        Py_XDECREF(ref);
        Py_XDECREF(owner);
        Py_DECREF(array);
        return NULL;
    }
    Py_DECREF(ref);
    Py_DECREF(owner);
    return array;
}

/* x._pending or x._device_data: what knows x's dtype and shape (borrowed). */
static PyObject *
source_of(PyObject *x, PyObject **pending)
{
    *pending = SLOT(x, off_array[A_PENDING]);
    if (*pending == NULL) {
        PyErr_SetString(PyExc_AttributeError, "DeviceArray without _pending");
        return NULL;
    }
    if (*pending != Py_None) {
        if (!Py_IS_TYPE(*pending, r_pending)) {
            PyErr_SetString(PyExc_TypeError, "DeviceArray._pending is not a Pending");
            return NULL;
        }
        return *pending;
    }
    *pending = NULL;
    return get_slot(x, off_array[A_DATA], "_device_data");
}

/* source.dtype / source.shape: a Pending's slot, or the native array's attribute (new refs). */
static PyObject *
source_attr(PyObject *source, PyObject *pending, int which)
{
    if (pending != NULL) {
        return Py_NewRef(get_slot(pending, off_pending[which], which == P_DTYPE ? "dtype" : "shape"));
    }
    return PyObject_GetAttr(source, which == P_DTYPE ? s_dtype : s_shape);
}

/* The loop cache's fusible entry for key (borrowed cached tuple), NULL when absent or not
 * fusible (no exception), NULL with an exception on error. */
static PyObject *
fusible_loop(PyObject *loops, PyObject *key)
{
    PyObject *cached = PyDict_GetItemWithError(loops, key);
    if (cached == NULL) {
        return NULL;
    }
    PyObject *flag = PySequence_GetItem(cached, 2);
    if (flag == NULL) {
        return NULL;
    }
    int fusible = PyObject_IsTrue(flag);
    Py_DECREF(flag);
    if (fusible <= 0) {
        return NULL;
    }
    return cached;
}

/* An operand's pending graph is read by a second graph: compute it once, here (lazy.record).
 * Returns 1 when it was materialized, 0 when it is now marked consumed, -1 on error. */
static int
consume(PyObject *array, PyObject *pending)
{
    long consumers = long_slot(pending, off_pending[P_CONSUMERS], "consumers");
    if (consumers == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (consumers) {
        PyObject *done = PyObject_CallOneArg(r_materialize, array);
        if (done == NULL) {
            return -1;
        }
        Py_DECREF(done);
        return 1;
    }
    set_slot(pending, off_pending[P_CONSUMERS], r_one);
    return 0;
}

static PyObject *
record_binary(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (r_array == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "npgpu._speedups.configure_fusion() was not called");
        return NULL;
    }
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "record_binary(ufunc, x, y, reflected, frame, loops)");
        return NULL;
    }
    PyObject *ufunc = args[0], *x = args[1], *y = args[2], *frame = args[4], *loops = args[5];
    if (!PyObject_TypeCheck(x, r_array)) {
        PyErr_SetString(PyExc_TypeError, "record_binary: x must be a DeviceArray");
        return NULL;
    }
    int reflected = PyObject_IsTrue(args[3]);
    if (reflected < 0 || !PyDict_Check(loops)) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_TypeError, "record_binary: loops must be a dict");
        }
        return NULL;
    }
    PyObject *errstate;
    if (recorded_errstate(&errstate) < 0) {
        return NULL;
    }
    if (errstate == NULL) {
        Py_RETURN_NONE;
    }
    PyObject *backend = get_slot(x, off_array[A_BACKEND], "_backend");
    PyObject *xp, *yp = NULL;
    PyObject *xs = backend == NULL ? NULL : source_of(x, &xp);
    if (xs == NULL) {
        Py_DECREF(errstate);
        return NULL;
    }
    /* (held: consume() runs Python code, and another thread may compute x or y meanwhile) */
    Py_XINCREF(xp);
    PyObject *result = NULL, *key = NULL, *xdtype = NULL, *xshape = NULL, *ydtype = NULL, *operand = NULL;
    int scalar = recorded_scalar(y);
    int python_float = Py_IS_TYPE(y, &PyFloat_Type);
    xdtype = scalar < 0 ? NULL : source_attr(xs, xp, P_DTYPE);
    if (xdtype == NULL) {
        goto done;
    }
    if (scalar) {
        /* (the dispatcher's key: a Python float by its type, a NumPy scalar by its dtype) */
        ydtype = python_float ? Py_NewRef((PyObject *)&PyFloat_Type) : (PyObject *)PyArray_DescrFromScalar(y);
        if (ydtype == NULL) {
            goto done;
        }
        key = reflected ? PyTuple_Pack(4, ufunc, backend, ydtype, xdtype) : PyTuple_Pack(4, ufunc, backend, xdtype, ydtype);
    }
    else {
        if (!Py_IS_TYPE(y, r_array) || SLOT(y, off_array[A_BACKEND]) != backend) {
            result = Py_NewRef(Py_None);
            goto done;
        }
        PyObject *ys = source_of(y, &yp);
        if (ys == NULL) {
            yp = NULL;
            goto done;
        }
        Py_XINCREF(yp);
        PyObject *yshape = source_attr(ys, yp, P_SHAPE);
        xshape = yshape == NULL ? NULL : source_attr(xs, xp, P_SHAPE);
        int differ = xshape == NULL ? -1 : PyObject_RichCompareBool(yshape, xshape, Py_NE);
        Py_XDECREF(yshape);
        if (differ) {
            result = differ < 0 ? NULL : Py_NewRef(Py_None);
            goto done;
        }
        ydtype = source_attr(ys, yp, P_DTYPE);
        if (ydtype == NULL) {
            goto done;
        }
        key = PyTuple_Pack(4, ufunc, backend, xdtype, ydtype);
    }
    if (key == NULL) {
        goto done;
    }
    PyObject *cached = fusible_loop(loops, key);
    if (cached == NULL) {
        result = PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
        goto done;
    }
    PyObject *loop = PySequence_GetItem(cached, 0);
    if (loop == NULL) {
        goto done;
    }
    long limit = max_nodes();
    long xnodes = xp == NULL ? 0 : long_slot(xp, off_pending[P_NODES], "nodes");
    long ynodes = (yp == NULL || y == x) ? 0 : long_slot(yp, off_pending[P_NODES], "nodes");
    if (PyErr_Occurred()) {
        Py_DECREF(loop);
        goto done;
    }
    long nodes = 1 + xnodes + ynodes;
    if (nodes > limit) {
        Py_DECREF(loop);
        result = Py_NewRef(Py_None);
        goto done;
    }
    if (xshape == NULL && (xshape = source_attr(xs, xp, P_SHAPE)) == NULL) {
        Py_DECREF(loop);
        goto done;
    }
    if (PyTuple_Check(xshape) && PyTuple_GET_SIZE(xshape) == 0) {
        /* a 0-d result: NumPy returns a scalar, which the general path computes at once */
        Py_DECREF(loop);
        result = Py_NewRef(Py_None);
        goto done;
    }
    /* (the Pending objects stay alive through x and y, and through xshape/xdtype held here) */
    if (xp != NULL) {
        int ran = consume(x, xp);
        if (ran < 0) {
            Py_DECREF(loop);
            goto done;
        }
        if (ran) {
            nodes -= xnodes;
        }
    }
    if (scalar) {
        /* a Python float is weak: it enters as the loop's dtype (NEP 50); a NumPy scalar as itself */
        PyObject *value;
        if (python_float) {
            PyObject *dt = PySequence_GetItem(loop, reflected ? 0 : 1);
            PyObject *type = dt == NULL ? NULL : PyObject_GetAttr(dt, s_type);
            Py_XDECREF(dt);
            value = type == NULL ? NULL : PyObject_CallOneArg(type, y);
            Py_XDECREF(type);
        }
        else {
            value = Py_NewRef(y);
        }
        operand = value == NULL ? NULL : r_scalar_arg->tp_alloc(r_scalar_arg, 0);
        if (operand == NULL) {
            Py_XDECREF(value);
            Py_DECREF(loop);
            goto done;
        }
        Py_XSETREF(SLOT(operand, off_value), value);
    }
    else {
        operand = Py_NewRef(y);
        if (yp != NULL && y != x) {
            int ran = consume(y, yp);
            if (ran < 0) {
                Py_DECREF(loop);
                goto done;
            }
            if (ran) {
                nodes -= ynodes;
            }
        }
    }
    PyObject *operands = reflected ? PyTuple_Pack(2, operand, x) : PyTuple_Pack(2, x, operand);
    PyObject *pending = operands == NULL ? NULL : new_pending(ufunc, loop, operands, xshape, nodes, frame, errstate);
    Py_XDECREF(operands);
    Py_DECREF(loop);
    if (pending != NULL) {
        result = new_pending_array(pending, backend);
    }
done:
    Py_DECREF(errstate);
    Py_XDECREF(key);
    Py_XDECREF(xdtype);
    Py_XDECREF(ydtype);
    Py_XDECREF(xshape);
    Py_XDECREF(operand);
    Py_XDECREF(xp);
    Py_XDECREF(yp);
    return result;
}

static PyObject *
record_unary(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (r_array == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "npgpu._speedups.configure_fusion() was not called");
        return NULL;
    }
    if (nargs != 4 || !PyDict_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "record_unary(ufunc, x, frame, loops: dict)");
        return NULL;
    }
    PyObject *ufunc = args[0], *x = args[1], *frame = args[2], *loops = args[3];
    if (!PyObject_TypeCheck(x, r_array)) {
        PyErr_SetString(PyExc_TypeError, "record_unary: x must be a DeviceArray");
        return NULL;
    }
    PyObject *errstate;
    if (recorded_errstate(&errstate) < 0) {
        return NULL;
    }
    if (errstate == NULL) {
        Py_RETURN_NONE;
    }
    PyObject *backend = get_slot(x, off_array[A_BACKEND], "_backend");
    PyObject *xp;
    PyObject *xs = backend == NULL ? NULL : source_of(x, &xp);
    if (xs == NULL) {
        Py_DECREF(errstate);
        return NULL;
    }
    Py_XINCREF(xp); /* (held, as in record_binary) */
    PyObject *result = NULL, *key = NULL, *shape = NULL, *loop = NULL;
    PyObject *dtype = source_attr(xs, xp, P_DTYPE);
    if (dtype == NULL || (key = PyTuple_Pack(3, ufunc, backend, dtype)) == NULL) {
        goto done;
    }
    PyObject *cached = fusible_loop(loops, key);
    if (cached == NULL) {
        result = PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
        goto done;
    }
    long nodes = 1;
    if (xp != NULL) {
        long xnodes = long_slot(xp, off_pending[P_NODES], "nodes");
        long limit = max_nodes();
        if (PyErr_Occurred()) {
            goto done;
        }
        nodes += xnodes;
        if (nodes > limit) {
            result = Py_NewRef(Py_None);
            goto done;
        }
    }
    if ((shape = source_attr(xs, xp, P_SHAPE)) == NULL || (loop = PySequence_GetItem(cached, 0)) == NULL) {
        goto done;
    }
    if (PyTuple_Check(shape) && PyTuple_GET_SIZE(shape) == 0) {
        result = Py_NewRef(Py_None); /* a 0-d result is NumPy's scalar: see record_binary */
        goto done;
    }
    if (xp != NULL) {
        int ran = consume(x, xp);
        if (ran < 0) {
            goto done;
        }
        if (ran) {
            nodes = 1;
        }
    }
    PyObject *operands = PyTuple_Pack(1, x);
    PyObject *pending = operands == NULL ? NULL : new_pending(ufunc, loop, operands, shape, nodes, frame, errstate);
    Py_XDECREF(operands);
    if (pending != NULL) {
        result = new_pending_array(pending, backend);
    }
done:
    Py_DECREF(errstate);
    Py_XDECREF(dtype);
    Py_XDECREF(key);
    Py_XDECREF(shape);
    Py_XDECREF(loop);
    Py_XDECREF(xp);
    return result;
}

/* The graph walk (_GraphState._walk of lazy.py). */
typedef struct {
    PyObject *signature; /* list of entries */
    PyObject *inputs, *scalars, *pendings;
    void **seen_keys;    /* ids already placed: a leaf's native or a pending array */
    Py_ssize_t *seen_pos;
    Py_ssize_t nseen, capacity;
} Walk;

static Py_ssize_t
seen_get(Walk *w, void *key)
{
    for (Py_ssize_t i = 0; i < w->nseen; i++) {
        if (w->seen_keys[i] == key) {
            return w->seen_pos[i];
        }
    }
    return -1;
}

static int
seen_put(Walk *w, void *key, Py_ssize_t position)
{
    if (w->nseen == w->capacity) {
        Py_ssize_t capacity = w->capacity ? 2 * w->capacity : 32;
        void **keys = PyMem_Realloc(w->seen_keys, capacity * sizeof(void *));
        if (keys == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        w->seen_keys = keys;
        Py_ssize_t *pos = PyMem_Realloc(w->seen_pos, capacity * sizeof(Py_ssize_t));
        if (pos == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        w->seen_pos = pos;
        w->capacity = capacity;
    }
    w->seen_keys[w->nseen] = key;
    w->seen_pos[w->nseen] = position;
    w->nseen++;
    return 0;
}

/* Append (tag, dtype of obj) to the signature; its position, or -1 on error. */
static Py_ssize_t
add_tagged(Walk *w, PyObject *tag, PyObject *obj)
{
    PyObject *dtype = PyObject_GetAttr(obj, s_dtype);
    PyObject *entry = dtype == NULL ? NULL : PyTuple_Pack(2, tag, dtype);
    Py_XDECREF(dtype);
    if (entry == NULL || PyList_Append(w->signature, entry) < 0) {
        Py_XDECREF(entry);
        return -1;
    }
    Py_DECREF(entry);
    return PyList_GET_SIZE(w->signature) - 1;
}

/* Pending x's position; `pending` is x's recorded call as read once by the caller: another thread
 * may compute x while this runs (an allocation here can run a collection, whose callbacks can let
 * other threads run), so it is held, not read again. */
static Py_ssize_t
walk_node(Walk *w, PyObject *x, PyObject *pending, int depth)
{
    if (depth > 1000) {
        PyErr_SetString(PyExc_RecursionError, "pending graph too deep");
        return -1;
    }
    PyObject *operands = get_slot(pending, off_pending[P_OPERANDS], "operands");
    if (operands == NULL) {
        return -1;
    }
    if (!PyTuple_Check(operands)) {
        PyErr_SetString(PyExc_TypeError, "Pending.operands is not a tuple");
        return -1;
    }
    Py_INCREF(pending);
    Py_INCREF(operands);
    PyObject *refs = PyTuple_New(PyTuple_GET_SIZE(operands));
    if (refs == NULL) {
        Py_DECREF(operands);
        Py_DECREF(pending);
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(operands); i++) {
        PyObject *o = PyTuple_GET_ITEM(operands, i);
        Py_ssize_t position;
        if (Py_IS_TYPE(o, r_scalar_arg)) {
            PyObject *value = get_slot(o, off_value, "value");
            if (value == NULL || PyList_Append(w->scalars, value) < 0 ||
                (position = add_tagged(w, s_scalar, value)) < 0) {
                goto error;
            }
        }
        else {
            if (!PyObject_TypeCheck(o, r_array)) {
                PyErr_SetString(PyExc_TypeError, "a recorded operand is neither a DeviceArray nor a ScalarArg");
                goto error;
            }
            PyObject *inner = get_slot(o, off_array[A_PENDING], "_pending");
            if (inner == NULL) {
                goto error;
            }
            if (inner != Py_None && !Py_IS_TYPE(inner, r_pending)) {
                PyErr_SetString(PyExc_TypeError, "DeviceArray._pending is not a Pending");
                goto error;
            }
            if (inner == Py_None) { /* a leaf, by its native (two views of one native are one input) */
                PyObject *data = get_slot(o, off_array[A_DATA], "_device_data");
                if (data == NULL) {
                    goto error;
                }
                position = seen_get(w, data);
                if (position < 0) {
                    if (PyList_Append(w->inputs, data) < 0 || (position = add_tagged(w, s_input, data)) < 0 ||
                        seen_put(w, data, position) < 0) {
                        goto error;
                    }
                }
            }
            else {
                position = seen_get(w, o);
                if (position < 0 && (position = walk_node(w, o, inner, depth + 1)) < 0) {
                    goto error;
                }
            }
        }
        PyObject *index = PyLong_FromSsize_t(position);
        if (index == NULL) {
            goto error;
        }
        PyTuple_SET_ITEM(refs, i, index);
    }
    PyObject *ufunc = get_slot(pending, off_pending[P_UFUNC], "ufunc");
    PyObject *loop = ufunc == NULL ? NULL : get_slot(pending, off_pending[P_LOOP], "loop");
    PyObject *errstate = loop == NULL ? NULL : get_slot(pending, off_pending[P_ERRSTATE], "errstate");
    PyObject *entry = errstate == NULL ? NULL : PyTuple_Pack(4, ufunc, loop, refs, errstate);
    if (entry == NULL || PyList_Append(w->signature, entry) < 0 || PyList_Append(w->pendings, pending) < 0) {
        Py_XDECREF(entry);
        goto error;
    }
    Py_DECREF(entry);
    Py_DECREF(refs);
    Py_DECREF(operands);
    Py_DECREF(pending);
    Py_ssize_t position = PyList_GET_SIZE(w->signature) - 1;
    return seen_put(w, x, position) < 0 ? -1 : position;
error:
    Py_DECREF(refs);
    Py_DECREF(operands);
    Py_DECREF(pending);
    return -1;
}

/* walk(root, out_dtype) -> (key, inputs, scalars, pendings): key is the signature plus out_dtype. */
static PyObject *
walk(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (r_array == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "npgpu._speedups.configure_fusion() was not called");
        return NULL;
    }
    if (nargs != 2 || !PyObject_TypeCheck(args[0], r_array)) {
        PyErr_SetString(PyExc_TypeError, "walk(root: DeviceArray, out_dtype)");
        return NULL;
    }
    PyObject *root = get_slot(args[0], off_array[A_PENDING], "_pending");
    if (root == NULL) {
        return NULL;
    }
    if (!Py_IS_TYPE(root, r_pending)) {
        PyErr_SetString(PyExc_TypeError, "walk: the root is not a pending array");
        return NULL;
    }
    Walk w = {PyList_New(0), PyList_New(0), PyList_New(0), PyList_New(0), NULL, NULL, 0, 0};
    PyObject *result = NULL;
    if (w.signature != NULL && w.inputs != NULL && w.scalars != NULL && w.pendings != NULL &&
        walk_node(&w, args[0], root, 0) >= 0 && PyList_Append(w.signature, args[1]) == 0) {
        PyObject *key = PyList_AsTuple(w.signature);
        if (key != NULL) {
            result = PyTuple_Pack(4, key, w.inputs, w.scalars, w.pendings);
            Py_DECREF(key);
        }
    }
    Py_XDECREF(w.signature);
    Py_XDECREF(w.inputs);
    Py_XDECREF(w.scalars);
    Py_XDECREF(w.pendings);
    PyMem_Free(w.seen_keys);
    PyMem_Free(w.seen_pos);
    return result;
}

/* ---------------------------------------------------------------------------------------------
 * DeviceArray's operators (a * b, -a, ...) and __array_ufunc__ (np.sqrt(a)): the commonest call,
 * a fusible ufunc of device arrays and floats from user code with fusion on, recorded here;
 * anything else goes to the Python method, which makes the same checks again and does the rest
 * (a declined recording changes nothing, so checking twice is safe). The recorder is read from
 * _array's globals per call, as the Python methods read it.
 * ------------------------------------------------------------------------------------------- */

enum { M_BINARY = 0, M_UNARY = 1, M_ARRAY_UFUNC = 2, M_GETITEM = 3, M_SETITEM = 4 };

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    int kind;
    int reflected;
    PyObject *ufunc;  /* the operator's ufunc (None for __array_ufunc__) */
    PyObject *method; /* the Python method */
    PyObject *dict;
} FastMethod;

static PyObject *m_code_kind;     /* _array._code_kind: id(code object) -> 0/1/2 (2: user code) */
static PyObject *m_array_globals; /* vars(npgpu._hooks.core): the installed recorder roads and loop cache */
static PyObject *m_native_binary, *m_native_unary; /* this module's record_binary / record_unary */
static PyObject *m_tracked;       /* _array.tracked: residency's ledgers (non-empty: index work is charged) */
static PyObject *m_report_local;  /* _report._local: this thread's table of call counts (.table) */
static PyObject *m_getitem_id;    /* id(_dispatch._GETITEM), the function views are counted under */
static PyObject *m_setitem_id;    /* id(_dispatch._SETITEM), the function writes are counted under */
static PyObject *s_record_binary, *s_record_unary, *s_loops, *s_call, *s_table, *s_ndim, *s_base,
    *s_charge_read, *s_charge_write;

static PyObject *
configure_methods(PyObject *module, PyObject *args)
{
    PyObject *code_kind, *globals, *tracked, *report_local, *getitem, *setitem;
    if (!PyArg_ParseTuple(args, "O!O!O!OOO:configure_methods", &PyDict_Type, &code_kind, &PyDict_Type, &globals,
                          &PyDict_Type, &tracked, &report_local, &getitem, &setitem)) {
        return NULL;
    }
    PyObject *getitem_id = PyLong_FromVoidPtr((void *)getitem);
    PyObject *setitem_id = getitem_id == NULL ? NULL : PyLong_FromVoidPtr((void *)setitem);
    if (setitem_id == NULL) {
        Py_XDECREF(getitem_id);
        return NULL;
    }
    Py_XSETREF(m_getitem_id, getitem_id);
    Py_XSETREF(m_setitem_id, setitem_id);
    Py_XSETREF(m_tracked, Py_NewRef(tracked));
    Py_XSETREF(m_report_local, Py_NewRef(report_local));
    PyObject *binary = PyObject_GetAttrString(module, "record_binary");
    PyObject *unary = binary == NULL ? NULL : PyObject_GetAttrString(module, "record_unary");
    if (unary == NULL) {
        Py_XDECREF(binary);
        return NULL;
    }
    Py_XSETREF(m_native_binary, binary);
    Py_XSETREF(m_native_unary, unary);
    Py_XSETREF(m_code_kind, Py_NewRef(code_kind));
    Py_XSETREF(m_array_globals, Py_NewRef(globals));
    Py_RETURN_NONE;
}

/* The calling frame (borrowed) when it runs user code, else NULL; *err set on error. */
static PyObject *
user_frame(int *err)
{
    *err = 0;
    PyFrameObject *frame = PyEval_GetFrame();
    if (frame == NULL) {
        return NULL;
    }
    PyCodeObject *code = PyFrame_GetCode(frame);
    /* keyed by id(code), as _callsite.CODE_KIND is: a code object's own hash is recomputed per lookup */
    PyObject *ident = PyLong_FromVoidPtr((void *)code);
    Py_DECREF(code);
    if (ident == NULL) {
        *err = 1;
        return NULL;
    }
    PyObject *kind = PyDict_GetItemWithError(m_code_kind, ident);
    Py_DECREF(ident);
    if (kind == NULL) {
        *err = PyErr_Occurred() != NULL;
        return NULL;
    }
    if (!PyLong_CheckExact(kind) || PyLong_AsLong(kind) != 2) {
        *err = PyErr_Occurred() != NULL;
        return NULL;
    }
    return (PyObject *)frame;
}

/* The recorder's answer for the short road: a new pending array, Py_None (declined), or NULL on
 * error. args[nargs - 1] is filled in here with _hooks.core.loops. */
static PyObject *
short_road(PyObject *name, PyObject *native, PyObject **args, Py_ssize_t nargs,
           PyObject *(*impl)(PyObject *, PyObject *const *, Py_ssize_t))
{
    const Fields *fields = state_fields();
    if (fields == NULL) {
        return NULL;
    }
    if (!fields->fusion || fields->backend == Py_None) {
        return Py_NewRef(Py_None);
    }
    PyObject *record = PyDict_GetItemWithError(m_array_globals, name);
    PyObject *loops = record == NULL ? NULL : PyDict_GetItemWithError(m_array_globals, s_loops);
    if (loops == NULL) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_RuntimeError, "npgpu._hooks.core has no recorder or loop cache");
        }
        return NULL;
    }
    if (record == Py_None) {
        return Py_NewRef(Py_None);
    }
    Py_INCREF(record);
    Py_INCREF(loops);
    args[nargs - 1] = loops;
    PyObject *result = record == native ? impl(NULL, args, nargs) : PyObject_Vectorcall(record, args, nargs, NULL);
    Py_DECREF(loops);
    Py_DECREF(record);
    return result;
}

/* _dispatch._basic_key: a key of ints, slices of ints (or None), None and Ellipsis. */
static int
basic_index(PyObject *k)
{
    if (Py_IS_TYPE(k, &PySlice_Type)) {
        PySliceObject *sl = (PySliceObject *)k;
        PyObject *parts[3] = {sl->start, sl->stop, sl->step};
        for (int i = 0; i < 3; i++) {
            if (parts[i] != Py_None && !Py_IS_TYPE(parts[i], &PyLong_Type)) {
                return 0;
            }
        }
        return 1;
    }
    return Py_IS_TYPE(k, &PyLong_Type) || k == Py_None || k == Py_Ellipsis;
}

static int
basic_key(PyObject *key)
{
    if (!PyTuple_CheckExact(key)) {
        return basic_index(key);
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(key); i++) {
        if (!basic_index(PyTuple_GET_ITEM(key, i))) {
            return 0;
        }
    }
    return 1;
}

#if PY_VERSION_HEX < 0x030C0000
/* _dispatch._spelled: slices spelled as (slice, start, stop, step), hashable before Python 3.12. */
static PyObject *
spelled_index(PyObject *k)
{
    if (!Py_IS_TYPE(k, &PySlice_Type)) {
        return Py_NewRef(k);
    }
    PySliceObject *sl = (PySliceObject *)k;
    return PyTuple_Pack(4, (PyObject *)&PySlice_Type, sl->start, sl->stop, sl->step);
}

static PyObject *
spelled_key(PyObject *key)
{
    if (!PyTuple_CheckExact(key)) {
        return spelled_index(key);
    }
    Py_ssize_t n = PyTuple_GET_SIZE(key);
    PyObject *spelled = PyTuple_New(n);
    if (spelled == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = spelled_index(PyTuple_GET_ITEM(key, i));
        if (item == NULL) {
            Py_DECREF(spelled);
            return NULL;
        }
        PyTuple_SET_ITEM(spelled, i, item);
    }
    return spelled;
}
#else
static PyObject *
spelled_key(PyObject *key)
{
    return Py_NewRef(key);
}
#endif

/* _report.count(func, "device", frame) where this thread's table has the key already (func_id:
 * id(func)): 1 counted, 0 not (no table yet, or a first count: the Python road's), -1 on error. */
static int
count_at(PyObject *frame, PyObject *func_id)
{
    PyObject *table = PyObject_GetAttr(m_report_local, s_table);
    if (table == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
            return -1;
        }
        PyErr_Clear();
        return 0;
    }
    int done = -1;
    PyCodeObject *code = PyFrame_GetCode((PyFrameObject *)frame);
    PyObject *code_id = PyLong_FromVoidPtr((void *)code);
    Py_DECREF(code);
#if PY_VERSION_HEX >= 0x030B0000
    PyObject *lasti = code_id == NULL ? NULL : PyLong_FromLong(PyFrame_GetLasti((PyFrameObject *)frame));
#else
    PyObject *lasti = code_id == NULL ? NULL : PyObject_GetAttr(frame, s_f_lasti);
#endif
    PyObject *key = lasti == NULL ? NULL : PyTuple_Pack(4, func_id, code_id, lasti, s_device);
    Py_XDECREF(code_id);
    Py_XDECREF(lasti);
    if (key == NULL) {
        goto end;
    }
    PyObject *n = PyDict_GetItemWithError(table, key); /* borrowed */
    if (n == NULL) {
        done = PyErr_Occurred() ? -1 : 0;
        goto end;
    }
    PyObject *more = PyNumber_Add(n, r_one);
    if (more != NULL && PyDict_SetItem(table, key, more) == 0) {
        done = 1;
    }
    Py_XDECREF(more);
end:
    Py_XDECREF(key);
    Py_DECREF(table);
    return done;
}

/* The view computed array keeps for basic key (_dispatch._view's table; borrowed), where the call
 * comes from user code (*frame, borrowed) with a device in force; NULL with *err unset where it
 * does not (the Python method decides), NULL with *err set on error. */
static PyObject *
kept_native(PyObject *array, PyObject *key, PyObject **frame, int *err)
{
    *err = 0;
    if (SLOT(array, off_array[A_PENDING]) != Py_None) {
        return NULL;
    }
    PyObject *views = SLOT(array, off_array[A_VIEWS]);
    if (views == NULL || !PyTuple_CheckExact(views) || PyTuple_GET_SIZE(views) != 2 ||
        PyTuple_GET_ITEM(views, 0) != SLOT(array, off_array[A_DATA]) ||
        !PyDict_CheckExact(PyTuple_GET_ITEM(views, 1)) || !basic_key(key)) {
        return NULL;
    }
    *frame = user_frame(err);
    if (*frame == NULL) {
        return NULL;
    }
    const Fields *fields = state_fields();
    if (fields == NULL) {
        *err = 1;
        return NULL;
    }
    if (fields->backend == Py_None) {
        return NULL;
    }
    PyObject *spelled = spelled_key(key);
    if (spelled == NULL) {
        *err = 1;
        return NULL;
    }
    PyObject *native = PyDict_GetItemWithError(PyTuple_GET_ITEM(views, 1), spelled); /* borrowed */
    Py_DECREF(spelled);
    if (native == NULL) {
        *err = PyErr_Occurred() != NULL;
    }
    return native;
}

/* array[key] for a basic key whose view array keeps (_dispatch._view), from user code, with a
 * device in force: _dispatch.basic_getitem's answer (a device array viewing array's memory,
 * counted at the caller's line, charged by residency) without its Python calls. NULL with *err
 * unset declines (the Python method does the rest: a first view or count, a scalar, anything
 * else); NULL with *err set is an error. */
static PyObject *
kept_view(PyObject *array, PyObject *key, int *err)
{
    PyObject *frame;
    PyObject *native = kept_native(array, key, &frame, err);
    if (native == NULL) {
        return NULL;
    }
    PyObject *data = SLOT(array, off_array[A_DATA]);
    Py_INCREF(native);
    PyObject *result = NULL, *root = NULL;
    /* a 0-d view is an element read (the Python road reads it back, or serves it from a copy) */
    PyObject *ndim = PyObject_GetAttr(native, s_ndim);
    if (ndim == NULL) {
        goto error;
    }
    long dims = PyLong_AsLong(ndim);
    Py_DECREF(ndim);
    if (dims == -1 && PyErr_Occurred()) {
        goto error;
    }
    if (dims == 0) {
        goto decline;
    }
    /* _transfer.view_of: the device array owning the memory is array, or its base */
    root = PyObject_GetAttr(native, s_base);
    if (root == NULL) {
        PyErr_Clear();
        goto decline;
    }
    if (root == Py_None) {
        goto decline; /* (a view of no memory's owner: the Python road makes it an array of its own) */
    }
    PyObject *base = SLOT(array, off_array[A_BASE]);
    PyObject *owner = NULL;
    if (data == root) {
        owner = base == Py_None ? array : base;
    }
    else if (base != Py_None) {
        PyObject *data_base = PyObject_GetAttr(data, s_base);
        if (data_base == NULL) {
            PyErr_Clear();
        }
        else {
            owner = data_base == root ? base : NULL;
            Py_DECREF(data_base);
        }
    }
    if (owner == NULL) {
        goto decline;
    }
    /* _report.count: this thread's table, at the caller's line; a first count is the Python road's */
    int counted = count_at(frame, m_getitem_id);
    if (counted < 0) {
        goto error;
    }
    if (counted == 0) {
        goto decline;
    }
    /* DeviceArray(native, array's backend, owner, array's read-only flag) */
    result = r_array->tp_alloc(r_array, 0);
    if (result == NULL) {
        goto error;
    }
    set_slot(result, off_array[A_DATA], native);
    set_slot(result, off_array[A_PENDING], Py_None);
    set_slot(result, off_array[A_BACKEND], SLOT(array, off_array[A_BACKEND]));
    set_slot(result, off_array[A_BASE], owner);
    set_slot(result, off_array[A_READONLY], SLOT(array, off_array[A_READONLY]));
    set_slot(result, off_array[A_VIEWS], Py_None);
    /* residency: DeviceArray.__getitem__'s charge, with the user's frame handed in */
    if (PyDict_GET_SIZE(m_tracked) > 0) {
        PyObject *charge = PyDict_GetItemWithError(m_array_globals, s_charge_read); /* borrowed */
        if (charge == NULL) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_RuntimeError, "npgpu._hooks.core has no charge_read");
            }
            goto error;
        }
        PyObject *call[5] = {array, key, result, Py_None, frame};
        PyObject *charged = PyObject_Vectorcall(charge, call, 5, NULL);
        if (charged == NULL) {
            goto error;
        }
        Py_DECREF(charged);
    }
    Py_DECREF(root);
    Py_DECREF(native);
    return result;
error:
    *err = 1;
decline:
    Py_XDECREF(result);
    Py_XDECREF(root);
    Py_DECREF(native);
    return NULL;
}

/* array[key] = value where value is the very view array keeps for a basic key (what
 * `a[1:, :] -= x` writes back after its in-place kernel), from user code, with a device in force:
 * _dispatch.basic_setitem's answer (nothing to write; the write counted at the caller's line and
 * charged by residency) without its Python calls. 1 when done, 0 declines (the Python method
 * does it: a first view or count, any other value or key), -1 on error. */
static int
same_view_write(PyObject *array, PyObject *key, PyObject *value)
{
    if (SLOT(array, off_array[A_READONLY]) != Py_False || SLOT(value, off_array[A_PENDING]) != Py_None ||
        SLOT(value, off_array[A_BACKEND]) != SLOT(array, off_array[A_BACKEND])) {
        return 0;
    }
    int err;
    PyObject *frame;
    PyObject *native = kept_native(array, key, &frame, &err);
    if (native == NULL) {
        return err ? -1 : 0;
    }
    if (native != SLOT(value, off_array[A_DATA])) {
        return 0;
    }
    /* _report.count(_SETITEM, "device", frame): this thread's table; a first count is the Python road's */
    int counted = count_at(frame, m_setitem_id);
    if (counted <= 0) {
        return counted;
    }
    /* residency: DeviceArray.__setitem__'s charge, with the user's frame handed in */
    if (PyDict_GET_SIZE(m_tracked) > 0) {
        PyObject *charge = PyDict_GetItemWithError(m_array_globals, s_charge_write); /* borrowed */
        if (charge == NULL) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_RuntimeError, "npgpu._hooks.core has no charge_write");
            }
            return -1;
        }
        PyObject *call[4] = {array, key, value, frame};
        PyObject *charged = PyObject_Vectorcall(charge, call, 4, NULL);
        if (charged == NULL) {
            return -1;
        }
        Py_DECREF(charged);
    }
    return 1;
}

static PyObject *
fast_method_call(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    FastMethod *self = (FastMethod *)op;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    int err = 0;
    PyObject *frame = NULL, *result = NULL;
    if (r_array == NULL || m_array_globals == NULL || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0)) {
        goto python;
    }
    if (self->kind == M_SETITEM) {
        /* array[key] = value: the very view array keeps, written back onto itself */
        if (nargs == 3 && Py_IS_TYPE(args[0], r_array) && Py_IS_TYPE(args[2], r_array) && m_tracked != NULL) {
            int done = same_view_write(args[0], args[1], args[2]);
            if (done < 0) {
                return NULL;
            }
            if (done) {
                Py_RETURN_NONE;
            }
        }
        goto python;
    }
    if (self->kind == M_GETITEM) {
        /* array[key]: a view the array keeps, from user code */
        if (nargs == 2 && Py_IS_TYPE(args[0], r_array) && m_tracked != NULL) {
            result = kept_view(args[0], args[1], &err);
            if (result != NULL || err) {
                return result;
            }
        }
        goto python;
    }
    switch (self->kind) {
    case M_BINARY:
        /* x <op> y with y a device array, a float or a NumPy scalar record_binary takes */
        if (nargs == 2 && PyObject_TypeCheck(args[0], r_array) &&  /* (err: as below, for M_ARRAY_UFUNC) */
            (Py_IS_TYPE(args[1], r_array) || (err = recorded_scalar(args[1])) > 0) &&
            (frame = user_frame(&err)) != NULL) {
            PyObject *call[6] = {self->ufunc, args[0], args[1], self->reflected ? Py_True : Py_False, frame, NULL};
            result = short_road(s_record_binary, m_native_binary, call, 6, record_binary);
        }
        break;
    case M_UNARY:
        if (nargs == 1 && PyObject_TypeCheck(args[0], r_array) && (frame = user_frame(&err)) != NULL) {
            PyObject *call[4] = {self->ufunc, args[0], frame, NULL};
            result = short_road(s_record_unary, m_native_unary, call, 4, record_unary);
        }
        break;
    case M_ARRAY_UFUNC:
        /* (self, ufunc, "__call__", self): np.sqrt(x) */
        if (nargs == 4 && args[3] == args[0] && Py_IS_TYPE(args[0], r_array) && PyUnicode_Check(args[2]) &&
            PyUnicode_Compare(args[2], s_call) == 0 && (frame = user_frame(&err)) != NULL) {
            PyObject *call[4] = {args[1], args[0], frame, NULL};
            result = short_road(s_record_unary, m_native_unary, call, 4, record_unary);
        }
        /* (self, ufunc, "__call__", a, b), self one of a and b: np.add(x, y), and a NumPy scalar's
         * operator (``c * x`` of a float64 c: NumPy's scalar calls the ufunc, which calls here) */
        else if (nargs == 5 && Py_IS_TYPE(args[0], r_array) && (args[3] == args[0] || args[4] == args[0]) &&
                 PyUnicode_Check(args[2]) && PyUnicode_Compare(args[2], s_call) == 0) {
            int reflected = args[3] != args[0];
            PyObject *other = reflected ? args[3] : args[4];
            /* (err: recorded_scalar's -1 on error; user_frame sets it anew) */
            if ((Py_IS_TYPE(other, r_array) || (err = recorded_scalar(other)) > 0) &&
                (frame = user_frame(&err)) != NULL) {
                PyObject *call[6] = {args[1], args[0], other, reflected ? Py_True : Py_False, frame, NULL};
                result = short_road(s_record_binary, m_native_binary, call, 6, record_binary);
            }
        }
        break;
    }
    if (err) {
        return NULL;
    }
    if (frame != NULL) {
        if (result == NULL || result != Py_None) {
            return result;
        }
        Py_DECREF(result);
    }
python:
    return PyObject_Vectorcall(self->method, args, nargsf, kwnames);
}

static PyObject *
fast_method_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *keywords[] = {"kind", "ufunc", "reflected", "method", NULL};
    int kind, reflected;
    PyObject *ufunc, *method;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "iOpO:FastMethod", keywords, &kind, &ufunc, &reflected, &method)) {
        return NULL;
    }
    if (kind < M_BINARY || kind > M_SETITEM || !PyCallable_Check(method)) {
        PyErr_SetString(PyExc_ValueError, "FastMethod: unknown kind or method not callable");
        return NULL;
    }
    FastMethod *self = (FastMethod *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->vectorcall = fast_method_call;
    self->kind = kind;
    self->reflected = reflected;
    self->ufunc = Py_NewRef(ufunc);
    self->method = Py_NewRef(method);
    return (PyObject *)self;
}

static int
fast_method_traverse(FastMethod *self, visitproc visit, void *arg)
{
    Py_VISIT(self->ufunc);
    Py_VISIT(self->method);
    Py_VISIT(self->dict);
    return 0;
}

static int
fast_method_clear(FastMethod *self)
{
    Py_CLEAR(self->ufunc);
    Py_CLEAR(self->method);
    Py_CLEAR(self->dict);
    return 0;
}

static void
fast_method_dealloc(FastMethod *self)
{
    PyObject_GC_UnTrack(self);
    fast_method_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
fast_method_repr(FastMethod *self)
{
    return PyUnicode_FromFormat("<npgpu fast method of %R>", self->method);
}

static PyMemberDef fast_method_members[] = {
    {"__dictoffset__", T_PYSSIZET, offsetof(FastMethod, dict), READONLY, NULL},
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(FastMethod, vectorcall), READONLY, NULL},
    {"_method", T_OBJECT, offsetof(FastMethod, method), READONLY, "the Python method it mirrors"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject FastMethodType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "npgpu._speedups.FastMethod",
    .tp_basicsize = sizeof(FastMethod),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "FastMethod(kind, ufunc, reflected, method): a DeviceArray method whose commonest call records in C.",
    .tp_new = fast_method_new,
    .tp_dealloc = (destructor)fast_method_dealloc,
    .tp_traverse = (traverseproc)fast_method_traverse,
    .tp_clear = (inquiry)fast_method_clear,
    .tp_repr = (reprfunc)fast_method_repr,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(FastMethod, vectorcall),
    .tp_dictoffset = offsetof(FastMethod, dict),
    .tp_descr_get = wrapper_descr_get,
    .tp_members = fast_method_members,
    .tp_getset = wrapper_getset,
};

static PyMethodDef module_methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(state_var, config_dict, ndarray, dtype, plain_types, dispatch_function, place_constructed)"},
    {"configure_fusion", configure_fusion, METH_VARARGS,
     "configure_fusion(DeviceArray, Pending, ScalarArg, Ref, forget, refs, lazy_globals, materialize)"},
    {"configure_errstate", configure_errstate, METH_VARARGS,
     "configure_errstate(numpy_errstate_contextvar, fperr_cache): where the recorder reads NumPy's errstate"},
    {"record_binary", (PyCFunction)(void (*)(void))record_binary, METH_FASTCALL,
     "record_binary(ufunc, x, y, reflected, frame, loops): lazy.record_binary in C"},
    {"record_unary", (PyCFunction)(void (*)(void))record_unary, METH_FASTCALL,
     "record_unary(ufunc, x, frame, loops): lazy.record_unary in C"},
    {"configure_methods", configure_methods, METH_VARARGS,
     "configure_methods(code_kind, hooks_dict, tracked, report_local, getitem, setitem)"},
    {"walk", (PyCFunction)(void (*)(void))walk, METH_FASTCALL,
     "walk(root, out_dtype) -> (key, inputs, scalars, pendings): lazy._GraphState's walk in C"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef speedups_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "npgpu._speedups",
    .m_doc = "The namespace wrappers' per-call check, in C.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    import_array();
    if (PyType_Ready(&WrapperType) < 0 || PyType_Ready(&CounterType) < 0 || PyType_Ready(&FastMethodType) < 0) {
        return NULL;
    }
#define INTERN(var, text)                          \
    if ((var = PyUnicode_InternFromString(text)) == NULL) { \
        return NULL;                               \
    }
    INTERN(s_default, "_default");
    INTERN(s_backend, "backend");
    INTERN(s_host_limit, "host_limit");
    INTERN(s_create_limit, "short_create_limit");  /* (the short road's limit: State) */
    INTERN(s_nbytes, "nbytes");
    INTERN(s_num, "num");
    INTERN(s_device, "device");
    INTERN(s_axis, "axis");
    INTERN(s_is_host, "is_host");
    INTERN(s_fusion, "fusion");
    INTERN(s_record_binary, "record_binary");
    INTERN(s_record_unary, "record_unary");
    INTERN(s_loops, "loops");
    INTERN(s_call, "__call__");
    INTERN(s_table, "table");
    INTERN(s_ndim, "ndim");
    INTERN(s_base, "base");
    INTERN(s_charge_read, "charge_read");
    INTERN(s_charge_write, "charge_write");
    INTERN(s_max_nodes, "MAX_NODES");
    INTERN(s_recorded_scalars, "RECORDED_SCALARS");
    INTERN(s_dtype, "dtype");
    INTERN(s_shape, "shape");
    INTERN(s_nin, "nin");
    INTERN(s_type, "type");
    INTERN(s_input, "input");
    INTERN(s_scalar, "scalar");
    INTERN(s_f_code, "f_code");
    INTERN(s_f_lasti, "f_lasti");
    if ((r_zero = PyLong_FromLong(0)) == NULL || (r_one = PyLong_FromLong(1)) == NULL) {
        return NULL;
    }
#undef INTERN
    PyObject *m = PyModule_Create(&speedups_module);
    if (m == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(m, "Wrapper", (PyObject *)&WrapperType) < 0 ||
        PyModule_AddObjectRef(m, "Counter", (PyObject *)&CounterType) < 0 ||
        PyModule_AddObjectRef(m, "FastMethod", (PyObject *)&FastMethodType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    PyModule_AddIntConstant(m, "FUNCTION", FUNCTION);
    PyModule_AddIntConstant(m, "CREATION", CREATION);
    PyModule_AddIntConstant(m, "CONSTRUCTOR", CONSTRUCTOR);
    PyModule_AddIntConstant(m, "REDUCTION", REDUCTION);
    PyModule_AddIntConstant(m, "SIZE_SHAPE_FIRST", SIZE_SHAPE_FIRST);
    PyModule_AddIntConstant(m, "SIZE_ARANGE", SIZE_ARANGE);
    PyModule_AddIntConstant(m, "SIZE_SQUARE", SIZE_SQUARE);
    PyModule_AddIntConstant(m, "SIZE_NUM_THIRD", SIZE_NUM_THIRD);
    PyModule_AddIntConstant(m, "M_BINARY", M_BINARY);
    PyModule_AddIntConstant(m, "M_UNARY", M_UNARY);
    PyModule_AddIntConstant(m, "M_ARRAY_UFUNC", M_ARRAY_UFUNC);
    PyModule_AddIntConstant(m, "M_GETITEM", M_GETITEM);
    PyModule_AddIntConstant(m, "M_SETITEM", M_SETITEM);
    return m;
}
