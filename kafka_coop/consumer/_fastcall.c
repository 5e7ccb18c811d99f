/* kafka_coop.consumer._fastcall: the per-record `poll` path in C (_core.py has the same path in Python and
 * uses it where this extension is not built: the pure wheel, a source install without a compiler).
 *
 * A Python closure around confluent-kafka's `poll` costs ~100 ns a call (a frame, one clock read, two
 * attribute accesses), about a tenth of a one-record poll; this one costs one call, a coarse clock read
 * and two struct fields. The logic is exactly the Python fast path in _core.WrappedClient.make_poll:
 *
 *     msg = inner_poll(*args, **kwargs)        # on any exception: broken(1), then re-raise it
 *     state.held = msg
 *     if state.slow or monotonic() - state.tick > gap: return slow(msg, hand_out)
 *     return msg
 *
 * With explicit marks (`handed` and `fold` given), `state.held` is not kept and a record taken on the fast
 * path is registered as handed out, as _core.WrappedClient.make_poll's poll_marked does:
 *
 *     if msg is not None:
 *         if len(handed) >= fold_at: fold()
 *         handed.append(msg)
 *
 * Written to the limited C API of Python 3.11 (the stable ABI), so one compiled wheel, cp311-abi3, serves
 * every CPython from 3.11 on. The stable ABI of 3.11 has no vectorcall: `FastPoll` takes its arguments as
 * a tuple (tp_call) and hands that same tuple to the client's `poll`, which takes a tuple itself
 * (METH_VARARGS), so a call still builds one tuple, as the vectorcall version did (measured alike:
 * docs/install.md).
 */
#define Py_LIMITED_API 0x030B0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h> /* PyMemberDef's T_* names (the limited API's own before 3.12) */
#include <time.h>

typedef struct {
    PyObject_HEAD
    PyObject *held;    /* drop-in: what the application holds now */
    char slow;         /* take the slow path on the next call (raised by the watchdog's tick) */
    double tick;       /* time.monotonic() of the watchdog's last tick */
    PyObject *weakreflist;
} CallState;

static PyTypeObject *CallStateType; /* the module is single-phase (m_size -1): one of each type */
static PyTypeObject *FastPollType;

static void set_ref(PyObject **slot, PyObject *value) {
    PyObject *old = *slot;
    Py_XINCREF(value);
    *slot = value;
    Py_XDECREF(old);
}

static void free_heap_object(PyObject *self) {
    PyTypeObject *type = Py_TYPE(self);
    freefunc tp_free = (freefunc)PyType_GetSlot(type, Py_tp_free);
    tp_free(self);
    Py_DECREF((PyObject *)type); /* an instance of a heap type holds a reference to its type */
}

static int CallState_init(CallState *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "", kwlist)) return -1;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    self->slow = 1;
    self->tick = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
    set_ref(&self->held, Py_None);
    return 0;
}

static int CallState_traverse(CallState *self, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE((PyObject *)self));
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
    free_heap_object((PyObject *)self);
}

static PyMemberDef CallState_members[] = {
    {"held", T_OBJECT, offsetof(CallState, held), 0, "what the application holds now (drop-in)"},
    {"slow", T_BOOL, offsetof(CallState, slow), 0, "take the slow path on the next call"},
    {"tick", T_DOUBLE, offsetof(CallState, tick), 0, "time.monotonic() of the watchdog's last tick"},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(CallState, weakreflist), READONLY, NULL},
    {NULL},
};

static PyType_Slot CallState_slots[] = {
    {Py_tp_doc, "The per-consumer state the hot path reads (see kafka_coop.consumer._freeze)."},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_init, CallState_init},
    {Py_tp_dealloc, CallState_dealloc},
    {Py_tp_traverse, CallState_traverse},
    {Py_tp_clear, CallState_clear},
    {Py_tp_members, CallState_members},
    {0, NULL},
};

static PyType_Spec CallState_spec = {
    .name = "kafka_coop.consumer._fastcall.CallState",
    .basicsize = sizeof(CallState),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = CallState_slots,
};

typedef struct {
    PyObject_HEAD
    PyObject *inner;    /* the client's bound poll */
    CallState *state;
    PyObject *slow;     /* slow(msg, hand_out) */
    PyObject *broken;   /* broken(1): the call raised */
    PyObject *hand_out; /* a bool */
    PyObject *one;
    PyObject *append;   /* explicit marks: the ledger's handed-out deque's bound append, else NULL */
    PyObject *handed;   /* that deque (its length says when to fold) */
    PyObject *fold;     /* fold(): take in what was handed out and marked */
    Py_ssize_t fold_at;
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

static PyObject *FastPoll_call(FastPoll *self, PyObject *args, PyObject *kwargs) {
    /* poll(timeout=-1), refused before the client is called (as the Python path's signature refuses
     * it): a TypeError from inside the client's call would count as a broken call, seeking back. */
    Py_ssize_t nargs = PyTuple_Size(args);
    Py_ssize_t nkw = kwargs == NULL ? 0 : PyDict_Size(kwargs);
    if (nargs + nkw > 1) {
        PyErr_Format(PyExc_TypeError, "poll() takes at most 1 argument (%zd given)", nargs + nkw);
        return NULL;
    }
    if (nkw == 1) {
        PyObject *key, *value;
        Py_ssize_t pos = 0;
        PyDict_Next(kwargs, &pos, &key, &value);
        if (!PyUnicode_Check(key) || PyUnicode_CompareWithASCIIString(key, "timeout") != 0) {
            PyErr_Format(PyExc_TypeError, "poll() got an unexpected keyword argument '%S'", key);
            return NULL;
        }
    }
    PyObject *msg = PyObject_Call(self->inner, args, kwargs);
    if (msg == NULL) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyObject *r = PyObject_CallFunctionObjArgs(self->broken, self->one, NULL);
        if (r == NULL) {
            PyErr_WriteUnraisable(self->broken);
        }
        Py_XDECREF(r);
        PyErr_Restore(type, value, tb);
        return NULL;
    }
    CallState *state = self->state;
    if (self->append == NULL) set_ref(&state->held, msg); /* drop-in: what the application holds */
    if (state->slow || coarse_now() - state->tick > self->gap) {
        PyObject *out = PyObject_CallFunctionObjArgs(self->slow, msg, self->hand_out, NULL);
        Py_DECREF(msg);
        return out;
    }
    if (self->append != NULL && msg != Py_None) {
        /* explicit marks: fold before registering it (as _core's poll_marked), then register it */
        Py_ssize_t n = PyObject_Size(self->handed);
        PyObject *r = n < 0 ? NULL : n >= self->fold_at ? PyObject_CallNoArgs(self->fold) : Py_NewRef(Py_None);
        if (r != NULL) {
            Py_DECREF(r);
            r = PyObject_CallFunctionObjArgs(self->append, msg, NULL);
        }
        if (r == NULL) {
            Py_DECREF(msg);
            return NULL;
        }
        Py_DECREF(r);
    }
    return msg;
}

static PyObject *FastPoll_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"inner", "state", "slow", "broken", "hand_out", "gap", "handed", "fold",
                             "fold_at", NULL};
    PyObject *inner, *state, *slow, *broken, *hand_out, *handed = Py_None, *fold = Py_None;
    double gap;
    Py_ssize_t fold_at = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO!OOO!d|$OOn", kwlist, &inner, CallStateType, &state,
                                     &slow, &broken, &PyBool_Type, &hand_out, &gap, &handed, &fold, &fold_at))
        return NULL;
    if ((handed == Py_None) != (fold == Py_None)) {
        PyErr_SetString(PyExc_TypeError, "FastPoll() takes handed and fold together, or neither");
        return NULL;
    }
    PyObject *append = NULL;
    if (handed != Py_None) {
        append = PyObject_GetAttrString(handed, "append");
        if (append == NULL) return NULL;
    }
    allocfunc tp_alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
    FastPoll *self = (FastPoll *)tp_alloc(type, 0);
    if (self == NULL) {
        Py_XDECREF(append);
        return NULL;
    }
    self->append = append;
    if (append != NULL) {
        Py_INCREF(handed); self->handed = handed;
        Py_INCREF(fold); self->fold = fold;
    }
    self->fold_at = fold_at;
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
    Py_VISIT(Py_TYPE((PyObject *)self));
    Py_VISIT(self->inner);
    Py_VISIT(self->state);
    Py_VISIT(self->slow);
    Py_VISIT(self->broken);
    Py_VISIT(self->hand_out);
    Py_VISIT(self->append);
    Py_VISIT(self->handed);
    Py_VISIT(self->fold);
    return 0;
}

static int FastPoll_clear(FastPoll *self) {
    Py_CLEAR(self->inner);
    Py_CLEAR(self->state);
    Py_CLEAR(self->slow);
    Py_CLEAR(self->broken);
    Py_CLEAR(self->hand_out);
    Py_CLEAR(self->one);
    Py_CLEAR(self->append);
    Py_CLEAR(self->handed);
    Py_CLEAR(self->fold);
    return 0;
}

static void FastPoll_dealloc(FastPoll *self) {
    PyObject_GC_UnTrack(self);
    FastPoll_clear(self);
    free_heap_object((PyObject *)self);
}

static PyType_Slot FastPoll_slots[] = {
    {Py_tp_doc, "poll(timeout=-1): the client's poll with kafka-coop's fast path (see the module)."},
    {Py_tp_new, FastPoll_new},
    {Py_tp_call, FastPoll_call},
    {Py_tp_dealloc, FastPoll_dealloc},
    {Py_tp_traverse, FastPoll_traverse},
    {Py_tp_clear, FastPoll_clear},
    {0, NULL},
};

static PyType_Spec FastPoll_spec = {
    .name = "kafka_coop.consumer._fastcall.FastPoll",
    .basicsize = sizeof(FastPoll),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = FastPoll_slots,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "kafka_coop.consumer._fastcall",
    .m_doc = "The per-record poll path in C (see _core.py).",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__fastcall(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    CallStateType = (PyTypeObject *)PyType_FromSpec(&CallState_spec);
    if (CallStateType == NULL) goto fail;
    FastPollType = (PyTypeObject *)PyType_FromSpec(&FastPoll_spec);
    if (FastPollType == NULL) goto fail;
    Py_INCREF((PyObject *)CallStateType);
    if (PyModule_AddObject(m, "CallState", (PyObject *)CallStateType) < 0) {
        Py_DECREF((PyObject *)CallStateType);
        goto fail;
    }
    Py_INCREF((PyObject *)FastPollType);
    if (PyModule_AddObject(m, "FastPoll", (PyObject *)FastPollType) < 0) {
        Py_DECREF((PyObject *)FastPollType);
        goto fail;
    }
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
