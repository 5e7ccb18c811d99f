/* kafka_coop.consumer._fastcall: the per-record `poll` path in C (optional; _core.py has the same path in
 * Python and uses it when this extension is not built).
 *
 * A Python closure around confluent-kafka's `poll` costs ~100 ns a call (a frame, one clock read, two
 * attribute accesses), about a tenth of a one-record poll; this one costs a vectorcall, a coarse clock
 * read and two struct fields. The logic is exactly the Python fast path in _core.Core.make_poll:
 *
 *     msg = inner_poll(*args, **kwargs)        # on any exception: broken(1), then re-raise it
 *     state.held = msg
 *     if state.slow or monotonic() - state.tick > gap: return slow(msg, hand_out)
 *     return msg
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <time.h>

typedef struct {
    PyObject_HEAD
    PyObject *held;    /* drop-in: what the application holds now */
    char slow;         /* take the slow path on the next call (raised by the watchdog's tick) */
    double tick;       /* time.monotonic() of the watchdog's last tick */
    PyObject *weakreflist;
} CallState;

static int CallState_init(CallState *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "", kwlist)) return -1;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    self->slow = 1;
    self->tick = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
    Py_INCREF(Py_None);
    Py_XSETREF(self->held, Py_None);
    return 0;
}

static int CallState_traverse(CallState *self, visitproc visit, void *arg) {
    Py_VISIT(self->held);
    return 0;
}

static int CallState_clear(CallState *self) {
    Py_CLEAR(self->held);
    return 0;
}

static void CallState_dealloc(CallState *self) {
    PyObject_GC_UnTrack(self);
    if (self->weakreflist != NULL) PyObject_ClearWeakRefs((PyObject *)self);
    CallState_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef CallState_members[] = {
    {"held", T_OBJECT, offsetof(CallState, held), 0, "what the application holds now (drop-in)"},
    {"slow", T_BOOL, offsetof(CallState, slow), 0, "take the slow path on the next call"},
    {"tick", T_DOUBLE, offsetof(CallState, tick), 0, "time.monotonic() of the watchdog's last tick"},
    {NULL},
};

static PyTypeObject CallStateType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafka_coop.consumer._fastcall.CallState",
    .tp_doc = "The per-consumer state the hot path reads (see kafka_coop.consumer._freeze).",
    .tp_basicsize = sizeof(CallState),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)CallState_init,
    .tp_dealloc = (destructor)CallState_dealloc,
    .tp_traverse = (traverseproc)CallState_traverse,
    .tp_clear = (inquiry)CallState_clear,
    .tp_members = CallState_members,
    .tp_weaklistoffset = offsetof(CallState, weakreflist),
};

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *inner;    /* the client's bound poll */
    CallState *state;
    PyObject *slow;     /* slow(msg, hand_out) */
    PyObject *broken;   /* broken(1): the call raised */
    PyObject *hand_out; /* a bool */
    PyObject *one;
    double gap;
} FastPoll;

static inline double coarse_now(void) {
    struct timespec ts;
#ifdef CLOCK_MONOTONIC_COARSE
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts); /* a few ms behind at most: the gap is a second */
#else
    clock_gettime(CLOCK_MONOTONIC, &ts);
#endif
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static PyObject *FastPoll_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                                     PyObject *kwnames) {
    FastPoll *self = (FastPoll *)callable;
    /* poll(timeout=-1), refused before the client is called (as the Python path's signature refuses
     * it): a TypeError from inside the client's call would count as a broken call, seeking back. */
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    if (nargs + nkw > 1) {
        PyErr_Format(PyExc_TypeError, "poll() takes at most 1 argument (%zd given)", nargs + nkw);
        return NULL;
    }
    if (nkw == 1 && PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "timeout") != 0) {
        PyErr_Format(PyExc_TypeError, "poll() got an unexpected keyword argument '%U'",
                     PyTuple_GET_ITEM(kwnames, 0));
        return NULL;
    }
    PyObject *msg = PyObject_Vectorcall(self->inner, args, nargsf, kwnames);
    if (msg == NULL) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyObject *r = PyObject_CallOneArg(self->broken, self->one);
        if (r == NULL) {
            PyErr_WriteUnraisable(self->broken);
        }
        Py_XDECREF(r);
        PyErr_Restore(type, value, tb);
        return NULL;
    }
    CallState *state = self->state;
    Py_INCREF(msg);
    Py_XSETREF(state->held, msg);
    if (state->slow || coarse_now() - state->tick > self->gap) {
        PyObject *out = PyObject_CallFunctionObjArgs(self->slow, msg, self->hand_out, NULL);
        Py_DECREF(msg);
        return out;
    }
    return msg;
}

static PyObject *FastPoll_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"inner", "state", "slow", "broken", "hand_out", "gap", NULL};
    PyObject *inner, *state, *slow, *broken, *hand_out;
    double gap;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO!OOO!d", kwlist, &inner, &CallStateType, &state, &slow,
                                     &broken, &PyBool_Type, &hand_out, &gap))
        return NULL;
    FastPoll *self = (FastPoll *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->vectorcall = FastPoll_vectorcall;
    Py_INCREF(inner); self->inner = inner;
    Py_INCREF(state); self->state = (CallState *)state;
    Py_INCREF(slow); self->slow = slow;
    Py_INCREF(broken); self->broken = broken;
    Py_INCREF(hand_out); self->hand_out = hand_out;
    self->one = PyLong_FromLong(1);
    self->gap = gap;
    if (self->one == NULL) { Py_DECREF(self); return NULL; }
    return (PyObject *)self;
}

static int FastPoll_traverse(FastPoll *self, visitproc visit, void *arg) {
    Py_VISIT(self->inner);
    Py_VISIT(self->state);
    Py_VISIT(self->slow);
    Py_VISIT(self->broken);
    Py_VISIT(self->hand_out);
    return 0;
}

static int FastPoll_clear(FastPoll *self) {
    Py_CLEAR(self->inner);
    Py_CLEAR(self->state);
    Py_CLEAR(self->slow);
    Py_CLEAR(self->broken);
    Py_CLEAR(self->hand_out);
    Py_CLEAR(self->one);
    return 0;
}

static void FastPoll_dealloc(FastPoll *self) {
    PyObject_GC_UnTrack(self);
    FastPoll_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject FastPollType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kafka_coop.consumer._fastcall.FastPoll",
    .tp_doc = "poll(timeout=-1): the client's poll with kafka-coop's fast path (see the module).",
    .tp_basicsize = sizeof(FastPoll),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_new = FastPoll_new,
    .tp_dealloc = (destructor)FastPoll_dealloc,
    .tp_traverse = (traverseproc)FastPoll_traverse,
    .tp_clear = (inquiry)FastPoll_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(FastPoll, vectorcall),
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "kafka_coop.consumer._fastcall",
    .m_doc = "The per-record poll path in C (optional; see _core.py).",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__fastcall(void) {
    if (PyType_Ready(&CallStateType) < 0 || PyType_Ready(&FastPollType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&CallStateType);
    if (PyModule_AddObject(m, "CallState", (PyObject *)&CallStateType) < 0) goto fail;
    Py_INCREF(&FastPollType);
    if (PyModule_AddObject(m, "FastPoll", (PyObject *)&FastPollType) < 0) goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
