/* _cflux.c - cflux from Python: a thin layer over the C API (include/cflux.h).
 *
 * A Model owns a cf_model through a Handle, the object that NumPy views of its
 * parameters keep alive: closing a model frees its executors, trainer and optimizer
 * at once, and the parameters' memory when the last view of it goes. Executors
 * (Exec) hold the Handle too. The engine runs with the GIL released, one call at a
 * time per model (the Handle's lock); a call from the thread that holds the lock (a
 * fit's callback using its own model) is refused, not deadlocked.
 *
 * Arrays in are float32 (class indices may be integers) in C order, read in place
 * where they already are; anything else of the right dtype is copied once. Arrays out
 * are new NumPy arrays, except the views of parameters and gradients. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cflux.h"

/* ---- errors ------------------------------------------------------------------------ */

static PyObject *Error, *ModelError, *ShapeError, *DataError;

/* Does the first line of msg speak of shapes? */
static int about_shapes(const char *msg)
{
    size_t n = strcspn(msg, "\n");
    static const char *const words[] = {"shape", "takes (", "dimension"};
    for (size_t w = 0; w < sizeof words / sizeof *words; w++) {
        size_t k = strlen(words[w]);
        for (size_t i = 0; i + k <= n; i++)
            if (!strncmp(msg + i, words[w], k)) return 1;
    }
    return 0;
}

/* Raise cflux's last error: as `kind` (what was being done), or ShapeError when the
 * message is about shapes. The message loses its "error: " prefix. NULL. */
static PyObject *raise_cf(PyObject *kind)
{
    const char *msg = cf_last_error();
    if (!msg || !*msg) msg = "error: cflux failed without a message";
    if (!strncmp(msg, "error: ", 7)) msg += 7;
    PyErr_SetString(about_shapes(msg) ? ShapeError : kind, msg);
    return NULL;
}

/* ---- the handle: a cf_model and its lock ------------------------------------------- */

typedef struct {
    PyObject_HEAD
    cf_model *m;
    PyThread_type_lock lock;
    unsigned long owner;   /* the thread holding lock, or 0 */
} Handle;

static void handle_dealloc(Handle *h)
{
    cf_model_free(h->m);
    if (h->lock) PyThread_free_lock(h->lock);
    Py_TYPE(h)->tp_free((PyObject *)h);
}

static PyTypeObject HandleType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cflux._Handle",
    .tp_basicsize = sizeof(Handle),
    .tp_dealloc = (destructor)handle_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The memory of a model, kept while a view of it lives.",
};

static Handle *handle_new(cf_model *m)
{
    Handle *h = PyObject_New(Handle, &HandleType);
    if (!h) {
        cf_model_free(m);
        return NULL;
    }
    h->m = m;
    h->owner = 0;
    h->lock = PyThread_allocate_lock();
    if (!h->lock) {
        Py_DECREF(h);
        PyErr_NoMemory();
        return NULL;
    }
    return h;
}

/* Take the model's lock (waiting without the GIL), 0; -1 with RuntimeError when this
 * thread holds it already. */
static int take(Handle *h)
{
    unsigned long me = PyThread_get_thread_ident();
    if (h->owner == me) {
        PyErr_SetString(PyExc_RuntimeError, "the model is busy in this thread: a callback of fit cannot use the model "
                                            "being trained (read m.params, or stop the fit by returning True)");
        return -1;
    }
    if (!PyThread_acquire_lock(h->lock, NOWAIT_LOCK)) {
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(h->lock, WAIT_LOCK);
        Py_END_ALLOW_THREADS
    }
    h->owner = me;
    return 0;
}

static void give(Handle *h)
{
    h->owner = 0;
    PyThread_release_lock(h->lock);
}

/* ---- shapes and arrays ------------------------------------------------------------- */

/* A model shape less its batch dimension. */
static cf_shape per_sample(cf_shape s)
{
    if (s.rank > 0 && s.d[0] == CF_BATCH) {
        for (int i = 1; i < s.rank; i++) s.d[i - 1] = s.d[i];
        s.rank--;
    }
    return s;
}

static size_t count_of(cf_shape s)
{
    size_t c = 1;
    for (int i = 0; i < s.rank; i++) c *= (size_t)s.d[i];
    return c;
}

/* "(B, 784)" for a per-sample shape. */
static void fmt_batched(cf_shape s, char *buf, size_t size)
{
    size_t k = (size_t)snprintf(buf, size, "(B");
    for (int i = 0; i < s.rank && k < size; i++) k += (size_t)snprintf(buf + k, size - k, ", %d", s.d[i]);
    if (k < size) snprintf(buf + k, size - k, ")");
}

static void fmt_array_shape(PyArrayObject *a, char *buf, size_t size)
{
    int nd = PyArray_NDIM(a);
    size_t k = (size_t)snprintf(buf, size, "(");
    for (int i = 0; i < nd && k < size; i++)
        k += (size_t)snprintf(buf + k, size - k, "%s%ld", i ? ", " : "", (long)PyArray_DIM(a, i));
    if (k < size) snprintf(buf + k, size - k, nd == 1 ? ",)" : ")");
}

/* What the array holds, for messages. */
static const char *dtype_name(PyArrayObject *a)
{
    static char buf[64];
    PyObject *s = PyObject_Str((PyObject *)PyArray_DESCR(a));
    const char *u = s ? PyUnicode_AsUTF8(s) : NULL;
    snprintf(buf, sizeof buf, "%s", u ? u : "?");
    Py_XDECREF(s);
    PyErr_Clear();
    return buf;
}

enum { AS_VALUES, AS_INDICES, AS_LABELS };

/* obj as n samples of the per-sample shape `sample`, float32 in C order: a new
 * reference, the array itself when it already is so, else a copy. kind AS_VALUES takes
 * float32; AS_INDICES (an input an embedding reads) and AS_LABELS (class indices)
 * take integers too. what names the argument, where the model's name for it ("the
 * model's input 'x'"). n receives the samples. NULL with TypeError or ShapeError. */
static PyArrayObject *as_samples(PyObject *obj, const char *what, const char *where, cf_shape sample, int kind,
                                 npy_intp *n)
{
    if (!PyArray_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be a NumPy array (float32%s), not %s", what,
                     kind != AS_VALUES ? " or integers" : "", Py_TYPE(obj)->tp_name);
        return NULL;
    }
    PyArrayObject *a = (PyArrayObject *)obj;
    int t = PyArray_TYPE(a);
    int ok = t == NPY_FLOAT32 || (kind != AS_VALUES && PyTypeNum_ISINTEGER(t) && t != NPY_BOOL);
    if (!ok) {
        if (kind == AS_VALUES && PyTypeNum_ISINTEGER(t))
            PyErr_Format(PyExc_TypeError, "%s is %s; cflux takes float32 inputs and does not convert them in silence: "
                                          "pass %s.astype(np.float32)%s", what, dtype_name(a), what,
                         t == NPY_UINT8 ? " / 255 for pixels" : "");
        else if (t == NPY_FLOAT64 || t == NPY_FLOAT16 || t == NPY_LONGDOUBLE)
            PyErr_Format(PyExc_TypeError, "%s is %s; cflux computes in float32 and does not convert in silence: pass "
                                          "%s.astype(np.float32)", what, dtype_name(a), what);
        else
            PyErr_Format(PyExc_TypeError, "%s is %s; cflux takes float32%s", what, dtype_name(a),
                         kind == AS_LABELS ? " or integer class indices" : kind == AS_INDICES ? " or integer indices" : "");
        return NULL;
    }
    int nd = PyArray_NDIM(a), fits = nd == sample.rank + 1;
    for (int i = 0; fits && i < sample.rank; i++) fits = PyArray_DIM(a, i + 1) == sample.d[i];
    /* one number per sample may come as (n, 1) */
    if (!fits && sample.rank == 0 && nd == 2 && PyArray_DIM(a, 1) == 1) fits = 1;
    if (!fits && sample.rank == 1 && sample.d[0] == 1 && nd == 1) fits = 1;
    if (!fits) {
        char have[96], want[96];
        fmt_array_shape(a, have, sizeof have);
        fmt_batched(sample, want, sizeof want);
        int single = nd == sample.rank;
        for (int i = 0; single && i < nd; i++) single = PyArray_DIM(a, i) == sample.d[i];
        PyErr_Format(ShapeError, "%s has shape %s, but %s takes %s: samples along the first axis%s", what, have, where,
                     want, single ? (sample.rank ? " (one sample: x[None])" : "") : "");
        return NULL;
    }
    *n = nd ? PyArray_DIM(a, 0) : 0;
    return (PyArrayObject *)PyArray_FROMANY(obj, NPY_FLOAT32, 0, 0, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_FORCECAST);
}

/* A new float32 array of n samples of a per-sample shape (NULL with the error). */
static PyArrayObject *new_samples(npy_intp n, cf_shape s)
{
    npy_intp dims[CF_MAX_DIMS + 1] = {0};
    dims[0] = n;
    for (int i = 0; i < s.rank; i++) dims[i + 1] = s.d[i];
    return (PyArrayObject *)PyArray_SimpleNew(s.rank + 1, dims, NPY_FLOAT32);
}

/* A writable view of count floats at p with shape s (batch included when batched),
 * keeping base alive. */
static PyObject *view_of(float *p, cf_shape s, PyObject *base, int writable)
{
    npy_intp dims[CF_MAX_DIMS] = {0};
    for (int i = 0; i < s.rank; i++) dims[i] = s.d[i];
    PyObject *a = PyArray_New(&PyArray_Type, s.rank, dims, NPY_FLOAT32, NULL, p, 0,
                              NPY_ARRAY_CARRAY & (writable ? ~0 : ~NPY_ARRAY_WRITEABLE), NULL);
    if (!a) return NULL;
    Py_INCREF(base);
    if (PyArray_SetBaseObject((PyArrayObject *)a, base)) {
        Py_DECREF(a);
        return NULL;
    }
    return a;
}

/* A shape as a tuple, None for the batch. */
static PyObject *shape_tuple(cf_shape s)
{
    PyObject *t = PyTuple_New(s.rank);
    for (int i = 0; t && i < s.rank; i++) {
        PyObject *v = s.d[i] == CF_BATCH ? Py_NewRef(Py_None) : PyLong_FromLong(s.d[i]);
        if (!v) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

/* ---- the model ------------------------------------------------------------------- */

static PyObject *stats_dict(const cf_epoch_stats *s);

typedef struct {
    PyObject_HEAD
    Handle *h;            /* NULL once closed */
    cf_trainer *trainer;  /* the last fit's, for save(); NULL before */
    cf_optim *optim;      /* update()'s */
    cf_optim_opts oo;
    cf_exec *pe[2];       /* predict's executors: a full batch and the last, short one */
    int pb[2];
} Model;

static PyTypeObject ModelType;

/* The model's inputs, less the training loss's label or target. */
static int model_inputs(const cf_model *m)
{
    return cf_model_input_count(m) - (cf_model_has_loss(m) ? 1 : 0);
}

static void model_drop(Model *self)
{
    for (int i = 0; i < 2; i++) {
        cf_exec_free(self->pe[i]);
        self->pe[i] = NULL;
        self->pb[i] = 0;
    }
    cf_trainer_free(self->trainer);
    self->trainer = NULL;
    cf_optim_free(self->optim);
    self->optim = NULL;
}

static Handle *live(Model *self)
{
    if (!self->h) PyErr_SetString(PyExc_ValueError, "the model is closed");
    return self->h;
}

/* The model's handle with its lock taken, and a reference held across the wait (a
 * close() in another thread may drop the model's own meanwhile): NULL when the model
 * is closed, before or while waiting. give_model ends it. */
static Handle *take_model(Model *self)
{
    Handle *h = live(self);
    if (!h) return NULL;
    Py_INCREF(h);
    if (take(h)) {
        Py_DECREF(h);
        return NULL;
    }
    if (self->h != h) {   /* closed while this thread waited */
        give(h);
        Py_DECREF(h);
        PyErr_SetString(PyExc_ValueError, "the model is closed");
        return NULL;
    }
    return h;
}

static void give_model(Handle *h)
{
    give(h);
    Py_DECREF(h);
}

static PyObject *model_wrap(cf_model *m)
{
    if (!m) return raise_cf(ModelError);
    Handle *h = handle_new(m);
    if (!h) return NULL;
    Model *self = (Model *)ModelType.tp_alloc(&ModelType, 0);
    if (!self) {
        Py_DECREF(h);
        return NULL;
    }
    self->h = h;
    return (PyObject *)self;
}

static void model_dealloc(Model *self)
{
    if (self->h) {
        /* no one holds the lock: a call holding it holds a reference to self too */
        model_drop(self);
        Py_CLEAR(self->h);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *model_close(Model *self, PyObject *unused)
{
    (void)unused;
    if (!self->h) Py_RETURN_NONE;
    Handle *h = take_model(self);
    if (!h) {   /* closed by another thread meanwhile: done */
        if (!self->h && PyErr_ExceptionMatches(PyExc_ValueError)) {
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        return NULL;
    }
    model_drop(self);
    self->h = NULL;
    give_model(h);
    Py_DECREF(h);   /* the model's own reference */
    Py_RETURN_NONE;
}

static PyObject *model_enter(Model *self, PyObject *unused)
{
    (void)unused;
    return Py_NewRef(self);
}

static PyObject *model_exit(Model *self, PyObject *args)
{
    (void)args;
    PyObject *r = model_close(self, NULL);
    Py_XDECREF(r);
    return r ? Py_NewRef(Py_False) : NULL;
}

/* Seal the model (its parameters drawn from the seed) if it is not yet. 0 or -1. */
static int sealed(Handle *h)
{
    if (cf_model_param_count(h->m) == 0 || cf_model_param_data(h->m, 0)) return 0;
    if (cf_model_init_params(h->m)) {
        raise_cf(ModelError);
        return -1;
    }
    return 0;
}

/* Named views (params 0, grads 1, states 2) as a dict. */
static PyObject *named_views(Model *self, int which)
{
    Handle *h = take_model(self);
    if (!h) return NULL;
    PyObject *d = NULL;
    if (sealed(h)) goto out;
    cf_model *m = h->m;
    int n = which == 2 ? cf_model_state_count(m) : cf_model_param_count(m);
    if (!(d = PyDict_New())) goto out;
    for (int i = 0; i < n; i++) {
        float *p = which == 0 ? cf_model_param_data(m, i) : which == 1 ? cf_model_param_grad(m, i)
                                                                    : cf_model_state_data(m, i);
        if (!p) continue;   /* no gradient (frozen, or no training bind yet) */
        cf_shape s = which == 2 ? cf_model_state_shape(m, i) : cf_model_param_shape(m, i);
        PyObject *v = view_of(p, s, (PyObject *)h, 1);
        if (!v || PyDict_SetItemString(d, which == 2 ? cf_model_state_name(m, i) : cf_model_param_name(m, i), v)) {
            Py_XDECREF(v);
            Py_CLEAR(d);
            goto out;
        }
        Py_DECREF(v);
    }
out:
    give_model(h);
    return d;
}

static PyObject *model_params(Model *self, void *c)
{
    (void)c;
    return named_views(self, 0);
}

static PyObject *model_grads(Model *self, void *c)
{
    (void)c;
    return named_views(self, 1);
}

static PyObject *model_states(Model *self, void *c)
{
    (void)c;
    return named_views(self, 2);
}

/* The epochs of the last fit (with those of the run it resumed). */
static PyObject *history_list(cf_trainer *t)
{
    const cf_epoch_stats *hist;
    int nh = t ? cf_trainer_history(t, &hist) : 0;
    PyObject *res = PyList_New(nh);
    for (int i = 0; res && i < nh; i++) {
        PyObject *d = stats_dict(&hist[i]);
        if (!d) {
            Py_CLEAR(res);
            break;
        }
        PyList_SET_ITEM(res, i, d);
    }
    return res;
}

static PyObject *model_history(Model *self, void *c)
{
    (void)c;
    Handle *h = take_model(self);
    if (!h) return NULL;
    PyObject *r = history_list(self->trainer);
    give_model(h);
    return r;
}

static PyObject *model_closed(Model *self, void *c)
{
    (void)c;
    return PyBool_FromLong(self->h == NULL);
}

/* [(name, shape)] of the inputs (io 0) or outputs (io 1); shapes with None for B. */
static PyObject *model_io(Model *self, int io)
{
    Handle *h = live(self);
    if (!h) return NULL;
    cf_model *m = h->m;
    int n = io ? cf_model_output_count(m) : model_inputs(m);
    PyObject *l = PyList_New(n);
    for (int i = 0; l && i < n; i++) {
        PyObject *t = shape_tuple(io ? cf_model_output_shape(m, i) : cf_model_input_shape(m, i));
        PyObject *e = t ? Py_BuildValue("(sN)", io ? cf_model_output_op(m, i) : cf_model_input_name(m, i), t) : NULL;
        if (!e) {
            Py_CLEAR(l);
            break;
        }
        PyList_SET_ITEM(l, i, e);
    }
    return l;
}

static PyObject *model_inputs_get(Model *self, void *c)
{
    (void)c;
    return model_io(self, 0);
}

static PyObject *model_outputs_get(Model *self, void *c)
{
    (void)c;
    return model_io(self, 1);
}

static PyObject *model_weights(Model *self, void *c)
{
    (void)c;
    Handle *h = live(self);
    return h ? PyLong_FromSize_t(cf_model_weight_count(h->m)) : NULL;
}

static PyObject *model_summary(Model *self, PyObject *args, PyObject *kw)
{
    static char *kws[] = {"batch", "depth", "json", NULL};
    int batch = 0, depth = 1, json = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|i$ip:summary", kws, &batch, &depth, &json)) return NULL;
    if (batch < 0 || depth < 1) {
        PyErr_SetString(PyExc_ValueError, "summary: batch is 0 (B) or more, depth 1 or more");
        return NULL;
    }
    Handle *h = take_model(self);
    if (!h) return NULL;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    int rc = f ? cf_model_summary_ex(h->m, batch, json, depth, f) : -1;
    if (f) fclose(f);
    give_model(h);
    PyObject *r = rc ? (f ? raise_cf(ModelError) : PyErr_NoMemory()) : PyUnicode_FromStringAndSize(buf, (Py_ssize_t)len);
    free(buf);
    return r;
}

static PyObject *model_save(Model *self, PyObject *args)
{
    PyObject *path;
    if (!PyArg_ParseTuple(args, "O&:save", PyUnicode_FSConverter, &path)) return NULL;
    Handle *h = take_model(self);
    if (!h) {
        Py_DECREF(path);
        return NULL;
    }
    int rc = sealed(h);
    if (!rc) {
        const char *p = PyBytes_AS_STRING(path);
        Py_BEGIN_ALLOW_THREADS
        rc = self->trainer ? cf_trainer_save(self->trainer, p) : cf_model_save_params(h->m, p);
        Py_END_ALLOW_THREADS
        if (rc) raise_cf(Error);
    }
    give_model(h);
    Py_DECREF(path);
    if (rc) return NULL;
    Py_RETURN_NONE;
}

static PyObject *model_load_params(Model *self, PyObject *args, PyObject *kw)
{
    static char *kws[] = {"path", "partial", NULL};
    PyObject *path;
    int partial = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|$p:load_params", kws, PyUnicode_FSConverter, &path, &partial))
        return NULL;
    Handle *h = take_model(self);
    if (!h) {
        Py_DECREF(path);
        return NULL;
    }
    const char *p = PyBytes_AS_STRING(path);
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = cf_model_load_params_ex(h->m, p, partial ? CF_LOAD_PARTIAL | CF_LOAD_MATCHING : 0);
    Py_END_ALLOW_THREADS
    if (rc) raise_cf(ModelError);
    give_model(h);
    Py_DECREF(path);
    if (rc) return NULL;
    /* partial: the notes of what was left out */
    if (partial && *cf_last_error()) return PyUnicode_FromString(cf_last_error());
    Py_RETURN_NONE;
}

static PyObject *model_set_seed(Model *self, PyObject *args)
{
    PyObject *o;
    if (!PyArg_ParseTuple(args, "O:set_seed", &o)) return NULL;
    unsigned long long seed = PyLong_AsUnsignedLongLong(o);
    if (seed == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    Handle *h = take_model(self);
    if (!h) return NULL;
    cf_model_set_seed(h->m, seed);
    give_model(h);
    Py_RETURN_NONE;
}

/* ---- predict ------------------------------------------------------------------------ */

/* The inputs of a call as a list of arrays, one per model input (ni of them), from a
 * single array, or a list or tuple of them. New reference, or NULL. */
static PyObject *input_list(PyObject *x, int ni)
{
    if (PyList_Check(x) || PyTuple_Check(x)) {
        Py_ssize_t k = PySequence_Size(x);
        if (ni == 1 && k != 1) {
            PyErr_Format(PyExc_TypeError, "x must be a NumPy array (float32), not %s", Py_TYPE(x)->tp_name);
            return NULL;
        }
        if (k != ni) {
            PyErr_Format(PyExc_ValueError, "the model has %d input%s, and %zd arrays were given", ni, ni == 1 ? "" : "s",
                         k);
            return NULL;
        }
        return PySequence_List(x);
    }
    if (ni != 1) {
        PyErr_Format(PyExc_ValueError, "the model has %d inputs: give a list of %d arrays", ni, ni);
        return NULL;
    }
    return Py_BuildValue("[O]", x);
}

/* Check and convert each input: arrays[i] becomes float32 in C order. n receives the
 * samples, the same for all. 0 or -1. */
static int convert_inputs(cf_model *m, PyObject *list, npy_intp *n)
{
    int ni = (int)PyList_GET_SIZE(list);
    for (int i = 0; i < ni; i++) {
        char what[64], where[160];
        snprintf(what, sizeof what, ni == 1 ? "x" : "x[%d]", i);
        snprintf(where, sizeof where, "the model's input '%s'", cf_model_input_name(m, i));
        npy_intp k;
        PyArrayObject *a = as_samples(PyList_GET_ITEM(list, i), what, where, per_sample(cf_model_input_shape(m, i)),
                                      cf_model_input_classes(m, i) ? AS_INDICES : AS_VALUES, &k);
        if (!a) return -1;
        PyList_SetItem(list, i, (PyObject *)a);
        if (i && k != *n) {
            PyErr_Format(ShapeError, "x[%d] has %ld samples and x[0] %ld: every input has one per sample", i, (long)k,
                         (long)*n);
            return -1;
        }
        *n = k;
    }
    return 0;
}

/* The executor for batch b, slot k (0: full batches, 1: the short last), bound or
 * reused. NULL with the error. */
static cf_exec *predict_exec(Model *self, int k, int b)
{
    if (self->pe[k] && self->pb[k] == b) return self->pe[k];
    cf_exec_free(self->pe[k]);
    self->pe[k] = cf_bind(self->h->m, b, 0);
    self->pb[k] = self->pe[k] ? b : 0;
    return self->pe[k];
}

typedef struct {
    Model *self;
    int ni, no, batch;
    size_t n;
    const float *x[16];   /* the inputs, n samples each */
    size_t xc[16];        /* floats per sample */
    float *out[16];
    size_t oc[16];
} predict_job;

/* The engine's part of predict, without the GIL. 0 or -1 (cf_last_error). */
static int predict_run(predict_job *j)
{
    cf_model *m = j->self->h->m;
    int norm = cf_model_input_norm(m, NULL, NULL) > 0;
    for (size_t at = 0; at < j->n; at += (size_t)j->batch) {
        size_t k = j->n - at < (size_t)j->batch ? j->n - at : (size_t)j->batch;
        cf_exec *e = predict_exec(j->self, k < (size_t)j->batch, (int)k);
        if (!e) return -1;
        if (at == 0) cf_exec_reset_state(e);
        for (int i = 0; i < j->ni; i++) {
            const float *src = j->x[i] + at * j->xc[i];
            if (i == 0 && norm) {   /* standardised on the way in: into the executor's own buffer */
                cf_exec_set_input(e, i, NULL);
                float *dst = cf_exec_input(e, i, NULL);
                memcpy(dst, src, k * j->xc[i] * sizeof *dst);
                cf_model_norm_inputs(m, dst, k);
            } else {
                cf_exec_set_input(e, i, src);   /* read in place */
            }
        }
        if (cf_forward(e, 0)) return -1;
        for (int o = 0; o < j->no; o++) {
            memcpy(j->out[o] + at * j->oc[o], cf_exec_output(e, o, NULL), k * j->oc[o] * sizeof(float));
            if (o == 0) cf_model_denorm_outputs(m, j->out[o] + at * j->oc[o], k);
        }
        for (int i = 0; i < j->ni; i++) cf_exec_set_input(e, i, NULL);   /* the caller's memory is not kept */
    }
    return 0;
}

static PyObject *model_predict(Model *self, PyObject *args, PyObject *kw)
{
    static char *kws[] = {"x", "batch", NULL};
    PyObject *x;
    int batch = 256;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$i:predict", kws, &x, &batch)) return NULL;
    if (batch < 1 || batch > 1 << 20) {
        PyErr_Format(PyExc_ValueError, "predict: batch is 1 to 1048576, not %d", batch);
        return NULL;
    }
    Handle *h = take_model(self);
    if (!h) return NULL;   /* first: a fit in another thread may be giving the model its loss */
    cf_model *m = h->m;
    predict_job j = {.self = self, .ni = model_inputs(m), .no = cf_model_output_count(m)};
    PyObject *list = NULL, *outs = NULL;
    npy_intp n = 0;
    if (j.ni > 16 || j.no > 16) {
        PyErr_SetString(PyExc_ValueError, "predict: a model of more than 16 inputs or outputs");
        goto fail;
    }
    if (!(list = input_list(x, j.ni)) || convert_inputs(m, list, &n)) goto fail;
    j.n = (size_t)n;
    j.batch = n < batch ? (int)(n ? n : 1) : batch;
    for (int i = 0; i < j.ni; i++) {
        j.x[i] = PyArray_DATA((PyArrayObject *)PyList_GET_ITEM(list, i));
        j.xc[i] = count_of(per_sample(cf_model_input_shape(m, i)));
    }
    if (!(outs = PyTuple_New(j.no))) goto fail;
    for (int o = 0; o < j.no; o++) {
        cf_shape s = per_sample(cf_model_output_shape(m, o));
        PyArrayObject *a = new_samples(n, s);
        if (!a) goto fail;
        PyTuple_SET_ITEM(outs, o, (PyObject *)a);
        j.out[o] = PyArray_DATA(a);
        j.oc[o] = count_of(s);
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = predict_run(&j);
    Py_END_ALLOW_THREADS
    if (rc) {
        raise_cf(DataError);
        goto fail;
    }
    give_model(h);
    Py_DECREF(list);
    if (j.no == 1) {
        PyObject *r = Py_NewRef(PyTuple_GET_ITEM(outs, 0));
        Py_DECREF(outs);
        return r;
    }
    return outs;
fail:
    give_model(h);
    Py_XDECREF(list);
    Py_XDECREF(outs);
    return NULL;
}

/* ---- data from arrays ------------------------------------------------------------ */

/* The loss a model trains or is scored with: loss (0: its own, else by its output). */
static cf_loss loss_of(const cf_model *m, cf_loss loss)
{
    if (loss) return loss;
    if (cf_model_has_loss(m)) return (cf_loss)cf_model_has_loss(m);
    return !strcmp(cf_model_output_op(m, 0), "softmax") ? CF_LOSS_XENT : CF_LOSS_MSE;
}

/* x and y as a dataset that reads them in place; *keep receives the arrays it reads
 * (a list the caller holds until the dataset is freed). NULL with the error. */
static cf_dataset *arrays_dataset(cf_model *m, PyObject *x, PyObject *y, cf_loss loss, const char *xn, const char *yn,
                                  PyObject **keep)
{
    *keep = NULL;
    if (model_inputs(m) != 1) {
        PyErr_Format(PyExc_ValueError, "training and scoring from arrays take a model of one input; this one has %d",
                     model_inputs(m));
        return NULL;
    }
    if (y == Py_None) {
        PyErr_Format(PyExc_TypeError, "%s is missing: the targets of %s (class indices for a classifier)", yn, xn);
        return NULL;
    }
    char where[160];
    snprintf(where, sizeof where, "the model's input '%s'", cf_model_input_name(m, 0));
    npy_intp n, ny;
    PyArrayObject *xa = as_samples(x, xn, where, per_sample(cf_model_input_shape(m, 0)),
                                   cf_model_input_classes(m, 0) ? AS_INDICES : AS_VALUES, &n);
    if (!xa) return NULL;
    cf_shape out = per_sample(cf_model_output_shape(m, 0)), ys = out;
    int labels = loss_of(m, loss) == CF_LOSS_XENT;
    if (labels) ys.rank--;   /* a class index where the output has its classes */
    if (ys.rank < 0) ys.rank = 0;
    char os[96];
    fmt_batched(out, os, sizeof os);
    if (labels) snprintf(where, sizeof where, "the model (output %s, a class index per sample%s)", os,
                         ys.rank ? " and position" : "");
    else snprintf(where, sizeof where, "the model's output %s (regression)", os);
    PyArrayObject *ya = as_samples(y, yn, where, ys, labels ? AS_LABELS : AS_VALUES, &ny);
    if (!ya) {
        Py_DECREF(xa);
        return NULL;
    }
    if (ny != n) {
        PyErr_Format(ShapeError, "%s has %ld samples and %s %ld: one target per sample", xn, (long)n, yn, (long)ny);
        goto fail;
    }
    if (n == 0) {
        PyErr_Format(DataError, "%s holds no samples", xn);
        goto fail;
    }
    cf_dataset *d = cf_dataset_view_arrays(PyArray_DATA(xa), per_sample(cf_model_input_shape(m, 0)), PyArray_DATA(ya),
                                           (int)count_of(ys), (size_t)n, xn);
    if (!d) {
        raise_cf(DataError);
        goto fail;
    }
    *keep = Py_BuildValue("[NN]", xa, ya);
    if (!*keep) {
        cf_dataset_free(d);
        return NULL;
    }
    return d;
fail:
    Py_DECREF(xa);
    Py_DECREF(ya);
    return NULL;
}

/* ---- data from a spec, as cflux train reads it ------------------------------------ */

static const char *const fashion_names[] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                            "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

/* The sequence length T of a model whose input 0 is one sequence (T), else 0. */
static int model_seq_len(const cf_model *m)
{
    cf_shape s = per_sample(cf_model_input_shape(m, 0));
    return s.rank == 1 ? s.d[0] : 0;
}

/* Read a data spec (cflux train --data) for m as the tool does: Fashion-MNIST's class
 * names for its data, the data's own class names (word labels, image folders), and
 * the notes a checkpoint keeps of how the data was read (data, label, columns,
 * features), so that the run's checkpoint is the tool's. 0, or -1 with the error in
 * msg, or when msg is empty in cf_last_error (called without the GIL). */
static int spec_data(cf_model *m, const char *spec, const char *label, const char *features, cf_dataset **train,
                     cf_dataset **test, char *msg, size_t size)
{
    const char *const *have;
    cf_shape out = cf_model_output_shape(m, 0);
    int nm = cf_model_class_names(m, &have);
    if (!nm && !strcmp(spec, "fashion-mnist") && out.rank == 2 && out.d[1] == 10 &&
        cf_model_set_class_names(m, fashion_names, 10))
        return -1;
    cf_data_opts o = cf_data_defaults();
    o.label = label;
    o.features = features;
    o.seq_len = model_seq_len(m);
    o.image = cf_model_input_shape(m, 0);
    o.nclass_names = cf_model_class_names(m, &o.class_names);
    if (cf_data_open_opts(spec, &o, train, test)) return -1;
    const char *const *dn;
    int n = cf_dataset_class_names(*train, &dn), k = cf_model_class_names(m, &have), same = n == k;
    for (int i = 0; same && i < n; i++) same = !strcmp(dn[i], have[i]);
    if (n && !same) {
        int want = out.rank ? out.d[out.rank - 1] : 0;
        if (k)
            snprintf(msg, size, "%s: the labels are %d classes, but the model's are %d others",
                     cf_dataset_name(*train), n, k);
        else if (want != n)
            snprintf(msg, size, "%s: the labels are %d classes, but the model's output gives %d; a classifier of "
                                "them ends with softmax over %d", cf_dataset_name(*train), n, want, n);
        if (k || want != n) return -1;
        if (cf_model_set_class_names(m, dn, n)) return -1;
    }
    return cf_model_note_data(m, spec, *train, features, NULL);
}

/* ---- evaluate -------------------------------------------------------------------- */

static PyObject *num_or_none(double v)
{
    return isfinite(v) ? PyFloat_FromDouble(v) : Py_NewRef(Py_None);
}

/* Set d[key] = v (stealing v); -1 when v is NULL or the set fails. */
static int put(PyObject *d, const char *key, PyObject *v)
{
    if (!v) return -1;
    int rc = PyDict_SetItemString(d, key, v);
    Py_DECREF(v);
    return rc;
}

/* The metrics as cflux eval --json gives them. */
static PyObject *metrics_dict(cf_model *m, size_t n, double loss, double acc, const cf_metrics *r)
{
    PyObject *d = PyDict_New();
    if (!d) return NULL;
    if (put(d, "samples", PyLong_FromSize_t(n)) || put(d, "loss", num_or_none(loss)) ||
        put(d, "accuracy", num_or_none(acc)))
        goto fail;
    if (!r->classes) {
        if (put(d, "mse", num_or_none(r->mse)) || put(d, "mae", num_or_none(r->mae)) || put(d, "r2", num_or_none(r->r2)))
            goto fail;
        return d;
    }
    int k = r->classes;
    if (r->top_k && (put(d, "top_k", PyLong_FromLong(r->top_k)) ||
                     put(d, "top_k_accuracy", num_or_none(r->top_k_accuracy))))
        goto fail;
    const char *const *names;
    int nn = cf_model_class_names(m, &names);
    PyObject *cl = PyList_New(k), *per = PyList_New(k);
    npy_intp dims[2] = {k, k};
    PyObject *conf = PyArray_SimpleNew(2, dims, NPY_INT64);
    if (put(d, "classes", cl) || put(d, "per_class", per) || put(d, "confusion", conf)) goto fail;
    for (int c = 0; c < k; c++) {
        PyObject *name = c < nn ? PyUnicode_FromString(names[c]) : PyUnicode_FromFormat("%d", c);
        PyObject *pc = Py_BuildValue("{sNsNsNsl}", "precision", num_or_none(r->precision[c]), "recall",
                                     num_or_none(r->recall[c]), "f1", num_or_none(r->f1[c]), "support", r->support[c]);
        if (!name || !pc) {
            Py_XDECREF(name);
            Py_XDECREF(pc);
            goto fail;
        }
        PyList_SET_ITEM(cl, c, name);
        PyList_SET_ITEM(per, c, pc);
    }
    int64_t *cm = PyArray_DATA((PyArrayObject *)conf);
    for (size_t i = 0; i < (size_t)k * (size_t)k; i++) cm[i] = r->confusion[i];
    if (put(d, "macro_precision", num_or_none(r->macro_precision)) ||
        put(d, "macro_recall", num_or_none(r->macro_recall)) || put(d, "macro_f1", num_or_none(r->macro_f1)))
        goto fail;
    return d;
fail:
    Py_DECREF(d);
    return NULL;
}

static PyObject *model_evaluate(Model *self, PyObject *args, PyObject *kw)
{
    static char *kws[] = {"x", "y", "batch", "top", "loss", NULL};
    PyObject *x, *y = Py_None;
    int batch = 256, top = 0;
    const char *lossname = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O$iiz:evaluate", kws, &x, &y, &batch, &top, &lossname)) return NULL;
    if (batch < 1 || batch > 1 << 20 || top < 0) {
        PyErr_Format(PyExc_ValueError, "evaluate: batch is 1 to 1048576 (not %d), top 0 or more (not %d)", batch, top);
        return NULL;
    }
    cf_loss loss = 0;
    if (lossname && !(loss = !strcmp(lossname, "xent") ? CF_LOSS_XENT : !strcmp(lossname, "mse") ? CF_LOSS_MSE : 0)) {
        PyErr_Format(PyExc_ValueError, "evaluate: loss is 'xent' or 'mse', not '%s'", lossname);
        return NULL;
    }
    Handle *h = take_model(self);
    if (!h) return NULL;
    PyObject *keep;
    cf_dataset *d = arrays_dataset(h->m, x, y, loss, "x", "y", &keep);
    if (!d) {
        give_model(h);
        return NULL;
    }
    cf_metrics r = {0};
    double l = NAN, acc = NAN;
    int rc = 0;
    Py_BEGIN_ALLOW_THREADS
    if (loss && cf_model_add_loss(h->m, loss)) rc = -1;
    if (!rc) rc = cf_evaluate(h->m, d, batch, &l, &acc);
    if (!rc) rc = cf_evaluate_metrics(h->m, d, batch, top, &r);
    Py_END_ALLOW_THREADS
    give_model(h);
    PyObject *res = rc ? raise_cf(DataError) : metrics_dict(h->m, cf_dataset_count(d), l, acc, &r);
    cf_metrics_free(&r);
    cf_dataset_free(d);
    Py_DECREF(keep);
    return res;
}

/* ---- fit --------------------------------------------------------------------------- */

/* A SIGINT during a fit asks the trainer to stop after its step; Python's own handler
 * runs too, so that KeyboardInterrupt is raised once the fit is back. */
static cf_trainer *volatile sigint_target;
static struct sigaction sigint_before;

static void on_sigint(int sig)
{
    cf_trainer *t = sigint_target;
    if (t) cf_trainer_stop_with(t, sig);
    if (!(sigint_before.sa_flags & SA_SIGINFO) && sigint_before.sa_handler != SIG_DFL &&
        sigint_before.sa_handler != SIG_IGN)
        sigint_before.sa_handler(sig);
}

typedef struct {
    PyObject *callbacks;   /* a list of callables, or NULL */
    int verbose, text;
    PyObject *error;       /* an exception a callback raised: (type, value, traceback) */
    PyObject *etype, *etb;
    const char *save;
    cf_trainer *trainer;
    int failed;            /* a checkpoint could not be written */
} fit_state;

static PyObject *stats_dict(const cf_epoch_stats *s)
{
    return Py_BuildValue("{sisisNsNsNsNsNsNsdsdsdsNsNsNsN}", "epoch", s->epoch, "epochs", s->epochs, "train_loss",
                         num_or_none(s->train_loss), "train_accuracy", num_or_none(s->train_accuracy), "val_loss",
                         num_or_none(s->val_loss), "val_accuracy", num_or_none(s->val_accuracy), "test_loss",
                         num_or_none(s->test_loss), "test_accuracy", num_or_none(s->test_accuracy), "lr", s->lr,
                         "seconds", s->seconds, "samples_per_sec", s->samples_per_sec, "val_mae",
                         num_or_none(s->val_mae), "val_r2", num_or_none(s->val_r2), "test_mae", num_or_none(s->test_mae),
                         "test_r2", num_or_none(s->test_r2));
}

/* As cflux train prints a figure: four decimals, or four digits in %g's way when that
 * would hide it; for text data a loss's unit. */
static const char *fmt_num(double v, int text, char *buf)
{
    double a = fabs(v);
    snprintf(buf, 32, a >= 1e5 || (a > 0 && a < 1e-3) ? "%.4g%s" : "%.4f%s", v, text ? " nats/char" : "");
    return buf;
}

/* After each epoch, with the GIL taken again: the line (verbose), the checkpoint
 * (save), the callbacks; non-zero stops the fit. */
static int fit_on_epoch(const cf_epoch_stats *s, void *user)
{
    fit_state *f = user;
    if (f->save && cf_trainer_save(f->trainer, f->save)) {   /* without the GIL */
        f->failed = 1;
        return 1;
    }
    if (!f->verbose && !f->callbacks) return 0;   /* the GIL stays free */
    PyGILState_STATE g = PyGILState_Ensure();
    int stop = 0;
    if (f->verbose) {
        char b[32], line[512];   /* the tool's line: what was not measured left out */
        size_t n = (size_t)snprintf(line, sizeof line, "epoch %2d/%d  train loss %s", s->epoch, s->epochs,
                                    fmt_num(s->train_loss, f->text, b));
        const struct { const char *label; double v; int text; } part[] = {
            {" acc ", s->train_accuracy, 0}, {" | val loss ", s->val_loss, f->text}, {" acc ", s->val_accuracy, 0},
            {" | test loss ", s->test_loss, f->text}, {" acc ", s->test_accuracy, 0}};
        for (size_t i = 0; i < sizeof part / sizeof *part && n < sizeof line; i++)
            if (!isnan(part[i].v))
                n += (size_t)snprintf(line + n, sizeof line - n, "%s%s", part[i].label, fmt_num(part[i].v, part[i].text, b));
        if (n < sizeof line)
            snprintf(line + n, sizeof line - n, " | %.1f s, %.0f %s/s\n", s->seconds,
                     f->text ? s->samples_per_sec * f->text : s->samples_per_sec, f->text ? "chars" : "samples");
        PyObject *out = PySys_GetObject("stdout");   /* borrowed; Jupyter's too */
        if (out && out != Py_None) {
            PyObject *r = PyObject_CallMethod(out, "write", "s", line);
            Py_XDECREF(r);
            r = r ? PyObject_CallMethod(out, "flush", NULL) : NULL;
            Py_XDECREF(r);
            PyErr_Clear();
        }
    }
    Py_ssize_t n = f->callbacks ? PyList_GET_SIZE(f->callbacks) : 0;
    for (Py_ssize_t i = 0; i < n && !stop; i++) {
        PyObject *d = stats_dict(s);
        PyObject *r = d ? PyObject_CallOneArg(PyList_GET_ITEM(f->callbacks, i), d) : NULL;
        Py_XDECREF(d);
        if (!r) {
            PyErr_Fetch(&f->etype, &f->error, &f->etb);
            stop = 1;
            break;
        }
        int t = PyObject_IsTrue(r);   /* an array's truth may raise */
        Py_DECREF(r);
        if (t < 0) {
            PyErr_Fetch(&f->etype, &f->error, &f->etb);
            stop = 1;
            break;
        }
        stop = t;
    }
    PyGILState_Release(g);
    return stop;
}

static void fit_on_warning(const char *msg, void *user)
{
    (void)user;
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *err = PySys_GetObject("stderr");
    if (err && err != Py_None) {
        PyObject *r = PyObject_CallMethod(err, "write", "s", msg);
        Py_XDECREF(r);
        r = PyObject_CallMethod(err, "write", "s", "\n");
        Py_XDECREF(r);
        PyErr_Clear();
    }
    PyGILState_Release(g);
}

/* A float argument that may be None (NAN). 0 or -1. */
static int opt_num(PyObject *o, const char *name, double lo, double hi, double *v)
{
    *v = NAN;
    if (!o || o == Py_None) return 0;
    double x = PyFloat_AsDouble(o);
    if (x == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "fit: %s is a number, not %s", name, Py_TYPE(o)->tp_name);
        return -1;
    }
    if (!(x >= lo && x <= hi)) {
        PyErr_Format(PyExc_ValueError, "fit: %s is from %g to %g, not %R", name, lo, hi, o);
        return -1;
    }
    *v = x;
    return 0;
}

static int opt_str(PyObject *o, const char *name, const char **s)
{
    *s = NULL;
    if (!o || o == Py_None) return 0;
    if (!PyUnicode_Check(o)) {
        PyErr_Format(PyExc_TypeError, "fit: %s is a str, not %s", name, Py_TYPE(o)->tp_name);
        return -1;
    }
    Py_ssize_t len;
    *s = PyUnicode_AsUTF8AndSize(o, &len);
    if (*s && strlen(*s) != (size_t)len) {
        PyErr_Format(PyExc_ValueError, "fit: %s holds a NUL character", name);
        *s = NULL;
    }
    return *s ? 0 : -1;
}

/* An int argument from lo to hi. */
static int opt_int(PyObject *o, const char *name, long lo, long hi, long *v)
{
    if (!o || o == Py_None) return 0;
    if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "fit: %s is a whole number, not %s", name, Py_TYPE(o)->tp_name);
        return -1;
    }
    int over;
    long x = PyLong_AsLongAndOverflow(o, &over);
    if (x == -1 && PyErr_Occurred()) return -1;
    if (over || x < lo || x > hi) {
        PyErr_Format(PyExc_ValueError, "fit: %s is from %ld to %ld, not %R", name, lo, hi, o);
        return -1;
    }
    *v = x;
    return 0;
}

static PyObject *model_fit(Model *self, PyObject *args, PyObject *kw)
{
    static char *kws[] = {"x", "y", "test", "epochs", "batch", "optim", "lr", "wd", "momentum", "clip", "schedule",
                          "val", "seed", "loss", "normalize", "patience", "keep_best", "limit_batches", "augment",
                          "label_smoothing", "save", "resume", "callbacks", "verbose", "label_col", "features", "classes", NULL};
    PyObject *x = NULL, *y = Py_None, *test = Py_None, *o_epochs = NULL, *o_batch = NULL, *o_optim = NULL,
             *o_lr = NULL, *o_wd = NULL, *o_mom = NULL, *o_clip = NULL, *o_sched = NULL, *o_val = NULL,
             *o_seed = NULL, *o_loss = NULL, *o_pat = NULL, *o_best = NULL, *o_limit = NULL, *o_aug = NULL,
             *o_smooth = NULL, *o_callbacks = Py_None, *o_label = Py_None, *o_features = Py_None,
             *o_classes = Py_None;
    PyObject *save = NULL, *resume = NULL;
    int normalize = 0, verbose = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O$OOOOOOOOOOOOpOOOOOO&O&OpOOO:fit", kws, &x, &y, &test, &o_epochs,
                                     &o_batch, &o_optim, &o_lr, &o_wd, &o_mom, &o_clip, &o_sched, &o_val, &o_seed,
                                     &o_loss, &normalize, &o_pat, &o_best, &o_limit, &o_aug, &o_smooth,
                                     PyUnicode_FSConverter, &save, PyUnicode_FSConverter, &resume, &o_callbacks,
                                     &verbose, &o_label, &o_features, &o_classes))
        return NULL;
    PyObject *keep = NULL, *tkeep = NULL, *callbacks = NULL, *classes = NULL, *res = NULL;
    Handle *h = NULL;
    int held = 0;
    cf_dataset *train = NULL, *testd = NULL;
    long epochs = 10, batch = 64, patience = 0, limit = 0;
    double lr, wd, mom, clip, val, smooth;
    const char *optim = "adam", *schedule = "cosine", *lossname = NULL, *keep_best = NULL, *augment = NULL;
    const char *spec = NULL, *features = NULL;
    char label[64] = "";
    unsigned long long seed = 0;
    if (opt_int(o_epochs, "epochs", 1, 1000000, &epochs) || opt_int(o_batch, "batch", 1, 1 << 20, &batch) ||
        opt_int(o_pat, "patience", 0, 1000000, &patience) || opt_int(o_limit, "limit_batches", 0, 1L << 40, &limit) ||
        opt_num(o_lr, "lr", 1e-12, 1e6, &lr) || opt_num(o_wd, "wd", 0, 1e6, &wd) ||
        opt_num(o_mom, "momentum", 0, 0.9999, &mom) || opt_num(o_clip, "clip", 0, 1e12, &clip) ||
        opt_num(o_val, "val", 0, 0.99, &val) || opt_num(o_smooth, "label_smoothing", 0, 0.99, &smooth) ||
        (o_optim && opt_str(o_optim, "optim", &optim)) || (o_sched && opt_str(o_sched, "schedule", &schedule)) ||
        opt_str(o_loss, "loss", &lossname) || opt_str(o_best, "keep_best", &keep_best) ||
        opt_str(o_aug, "augment", &augment))
        goto out;
    if (!optim) optim = "adam";
    if (!schedule) schedule = "cosine";
    if (PyUnicode_Check(x)) {   /* a data spec, as cflux train --data takes */
        if (opt_str(x, "the data spec", &spec)) goto out;
        if (y != Py_None) {
            PyErr_SetString(PyExc_TypeError, "fit: a data spec holds its targets: give no y with it");
            goto out;
        }
    }
    if (opt_str(o_features, "features", &features)) goto out;
    if (PyLong_Check(o_label)) {
        long c;
        if (opt_int(o_label, "label_col", -100000, 100000, &c)) goto out;
        snprintf(label, sizeof label, "%ld", c);
    } else if (o_label != Py_None) {
        const char *l;
        if (opt_str(o_label, "label_col", &l)) goto out;
        snprintf(label, sizeof label, "%.63s", l);
    }
    if ((*label || features) && (!spec || strncmp(spec, "csv:", 4))) {
        PyErr_SetString(PyExc_ValueError, "fit: label_col and features are for CSV data (a spec 'csv:FILE'); of arrays, "
                                          "give y and the columns of x");
        goto out;
    }
    if (o_seed && o_seed != Py_None) {
        if (!PyLong_Check(o_seed)) {
            PyErr_Format(PyExc_TypeError, "fit: seed is a whole number, not %s", Py_TYPE(o_seed)->tp_name);
            goto out;
        }
        seed = PyLong_AsUnsignedLongLong(o_seed);
        if (PyErr_Occurred()) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError, "fit: seed is from 0 to 18446744073709551615, not %R", o_seed);
            goto out;
        }
    }
    cf_loss loss = 0;
    if (lossname && !(loss = !strcmp(lossname, "xent") ? CF_LOSS_XENT : !strcmp(lossname, "mse") ? CF_LOSS_MSE : 0)) {
        PyErr_Format(PyExc_ValueError, "fit: loss is 'xent' or 'mse', not '%s'", lossname);
        goto out;
    }
    cf_optim_opts oo = cf_optim_defaults(optim);
    if (!oo.name) {
        PyErr_Format(PyExc_ValueError, "fit: unknown optimizer '%s' (sgd, momentum, nesterov, adam, adamw)", optim);
        goto out;
    }
    if (!isnan(lr)) oo.lr = (float)lr;
    if (!isnan(wd)) oo.weight_decay = (float)wd;
    if (!isnan(mom)) oo.momentum = (float)mom;
    if (!isnan(clip)) oo.clip_norm = (float)clip;
    float lr0;
    if (cf_schedule_lr(schedule, 1, 0, 1, 1, &lr0)) {
        raise_cf(PyExc_ValueError);
        goto out;
    }
    if (o_callbacks != Py_None) {
        callbacks = PyCallable_Check(o_callbacks) ? Py_BuildValue("[O]", o_callbacks) : PySequence_List(o_callbacks);
        if (!callbacks) {
            PyErr_Format(PyExc_TypeError, "fit: callbacks is a callable or a list of them, not %s",
                         Py_TYPE(o_callbacks)->tp_name);
            goto out;
        }
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(callbacks); i++)
            if (!PyCallable_Check(PyList_GET_ITEM(callbacks, i))) {
                PyErr_Format(PyExc_TypeError, "fit: callbacks[%zd] is not callable (%s)", i,
                             Py_TYPE(PyList_GET_ITEM(callbacks, i))->tp_name);
                goto out;
            }
    }
    const char *names[1024];
    int nnames = 0;
    if (o_classes != Py_None) {   /* cflux train --classes: the classes' names, kept in the checkpoint */
        PyObject *l = PySequence_Check(o_classes) && !PyUnicode_Check(o_classes) ? PySequence_Fast(o_classes, "") : NULL;
        if (!l) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "fit: classes is a list of names, not %s", Py_TYPE(o_classes)->tp_name);
            goto out;
        }
        Py_ssize_t k = PySequence_Fast_GET_SIZE(l);
        for (Py_ssize_t i = 0; i < k && i < 1024; i++) {
            PyObject *it = PySequence_Fast_GET_ITEM(l, i);
            if (!PyUnicode_Check(it) || !(names[i] = PyUnicode_AsUTF8(it))) {
                if (!PyErr_Occurred())
                    PyErr_Format(PyExc_TypeError, "fit: classes[%zd] is a str, not %s", i, Py_TYPE(it)->tp_name);
                Py_DECREF(l);
                goto out;
            }
        }
        nnames = (int)(k < 1024 ? k : 1024);
        if (k > 1024 || k == 0) {
            PyErr_Format(PyExc_ValueError, "fit: classes holds %zd names; 1 to 1024", k);
            Py_DECREF(l);
            goto out;
        }
        classes = l;
    }
    h = take_model(self);
    if (!h) goto out;
    held = 1;   /* from here: a fit in another thread would change the model's inputs */
    cf_model *m = h->m;
    if (augment && cf_augment_check(augment, cf_model_input_shape(m, 0))) {
        raise_cf(PyExc_ValueError);
        goto out;
    }
    if (!spec && !(train = arrays_dataset(m, x, y, loss, "x", "y", &keep))) goto out;
    if (!spec && cf_model_note_input_range(m, train)) {   /* for predict's note, as cflux train keeps it */
        raise_cf(DataError);
        goto out;
    }
    if (test != Py_None) {
        if (!PyTuple_Check(test) || PyTuple_GET_SIZE(test) != 2) {
            PyErr_Format(PyExc_TypeError, "fit: test is a tuple (x, y) of held-out data, not %s", Py_TYPE(test)->tp_name);
            goto out;
        }
        if (!(testd = arrays_dataset(m, PyTuple_GET_ITEM(test, 0), PyTuple_GET_ITEM(test, 1), loss, "test[0]",
                                     "test[1]", &tkeep)))
            goto out;
    }
    if (nnames && cf_model_set_class_names(m, names, nnames)) {
        raise_cf(PyExc_ValueError);
        goto out;
    }
    model_drop(self);   /* a new run: its own trainer */
    cf_model_set_seed(m, seed);
    if (spec) {
        cf_dataset *spec_test = NULL;
        char msg[512] = "";
        int bad;
        Py_BEGIN_ALLOW_THREADS
        bad = spec_data(m, spec, *label ? label : NULL, features, &train, &spec_test, msg, sizeof msg);
        Py_END_ALLOW_THREADS
        if (bad) {
            cf_dataset_free(spec_test);
            if (*msg) PyErr_SetString(DataError, msg);
            else raise_cf(DataError);
            goto out;
        }
        if (testd) cf_dataset_free(spec_test);   /* test= given: that, not the spec's */
        else testd = spec_test;
    }
    fit_state fs = {.callbacks = callbacks, .verbose = verbose,
                    .save = save ? PyBytes_AS_STRING(save) : NULL};
    cf_fit_opts fo = cf_fit_defaults();
    fo.epochs = (int)epochs;
    fo.batch = (int)batch;
    fo.optim = oo;
    fo.schedule = schedule;
    fo.val_fraction = isnan(val) ? 0 : val;
    fo.seed = seed;
    fo.loss = loss;
    fo.normalize = normalize;
    fo.on_epoch = fit_on_epoch;
    fo.on_warning = fit_on_warning;
    fo.user = &fs;
    fo.patience = (int)patience;
    fo.keep_best = keep_best;
    fo.limit_batches = limit;
    fo.augment = augment;
    fo.label_smoothing = isnan(smooth) ? 0 : smooth;
    int rc = 0, caught = 0;
    Py_BEGIN_ALLOW_THREADS
    self->trainer = cf_trainer_new(m, train, &fo);
    fs.trainer = self->trainer;
    if (!self->trainer) rc = -1;
    if (!rc && resume) rc = cf_trainer_load(self->trainer, PyBytes_AS_STRING(resume));
    Py_END_ALLOW_THREADS
    if (rc) {
        raise_cf(DataError);
        cf_trainer_free(self->trainer);
        self->trainer = NULL;
        goto out;
    }
    fs.text = cf_dataset_vocab(train, NULL) ? cf_dataset_sample_shape(train).d[0] : 0;
    if (cf_trainer_epoch(self->trainer) >= (int)epochs) {   /* as cflux train says it */
        char note[512];
        snprintf(note, sizeof note, "note: %s has done %d epochs of the %ld asked for: nothing to train (raise epochs)",
                 PyBytes_AS_STRING(resume), cf_trainer_epoch(self->trainer), epochs);
        held = 0;
        give_model(h);
        fit_on_warning(note, NULL);
        res = history_list(self->trainer);
        goto out;
    }
    /* Ctrl-C: stop after the step, when Python's handler is the one in place */
    if (_PyOS_IsMainThread()) {
        struct sigaction sa, now;
        if (sigaction(SIGINT, NULL, &now) == 0 && !(now.sa_flags & SA_SIGINFO) && now.sa_handler != SIG_DFL &&
            now.sa_handler != SIG_IGN) {
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = on_sigint;
            sigemptyset(&sa.sa_mask);
            sigint_before = now;
            sigint_target = self->trainer;
            caught = sigaction(SIGINT, &sa, NULL) == 0;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    rc = cf_fit(self->trainer, train, testd);
    Py_END_ALLOW_THREADS
    if (caught) {
        sigaction(SIGINT, &sigint_before, NULL);
        sigint_target = NULL;
    }
    if (fs.etype) {   /* a callback's exception */
        PyErr_Restore(fs.etype, fs.error, fs.etb);
        goto out;
    }
    if (rc < 0 || fs.failed) {
        raise_cf(DataError);
        goto out;
    }
    if (rc == CF_STOPPED && fs.save && cf_trainer_save(self->trainer, fs.save)) {   /* where it stopped */
        raise_cf(Error);
        goto out;
    }
    res = history_list(self->trainer);
    held = 0;
    give_model(h);   /* before Python's handler runs: it may use the model */
    if (rc == CF_STOPPED && PyErr_CheckSignals()) Py_CLEAR(res);   /* KeyboardInterrupt, as the handler says */
out:
    if (held) give_model(h);
    cf_dataset_free(train);
    cf_dataset_free(testd);
    Py_XDECREF(keep);
    Py_XDECREF(tkeep);
    Py_XDECREF(callbacks);
    Py_XDECREF(classes);
    Py_XDECREF(save);
    Py_XDECREF(resume);
    return res;
}

/* ---- update: an optimizer step on the gradients ------------------------------------ */

static PyObject *model_update(Model *self, PyObject *args, PyObject *kw)
{
    static char *kws[] = {"lr", "optim", "momentum", "wd", "clip", NULL};
    PyObject *o_lr = NULL, *o_mom = NULL, *o_wd = NULL, *o_clip = NULL;
    const char *optim = "sgd";
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O$sOOO:update", kws, &o_lr, &optim, &o_mom, &o_wd, &o_clip))
        return NULL;
    double lr, mom, wd, clip;
    if (opt_num(o_lr, "lr", 0, 1e6, &lr) || opt_num(o_mom, "momentum", 0, 0.9999, &mom) ||
        opt_num(o_wd, "wd", 0, 1e6, &wd) || opt_num(o_clip, "clip", 0, 1e12, &clip))
        return NULL;
    cf_optim_opts oo = cf_optim_defaults(optim);
    if (!oo.name) {
        PyErr_Format(PyExc_ValueError, "update: unknown optimizer '%s' (sgd, momentum, nesterov, adam, adamw)", optim);
        return NULL;
    }
    if (!isnan(lr)) oo.lr = (float)lr;
    if (!isnan(mom)) oo.momentum = (float)mom;
    if (!isnan(wd)) oo.weight_decay = (float)wd;
    if (!isnan(clip)) oo.clip_norm = (float)clip;
    Handle *h = take_model(self);
    if (!h) return NULL;
    int rc = sealed(h);
    if (!rc && self->optim && (strcmp(self->oo.name, oo.name) || self->oo.momentum != oo.momentum ||
                               self->oo.weight_decay != oo.weight_decay || self->oo.clip_norm != oo.clip_norm)) {
        cf_optim_free(self->optim);   /* another optimizer: its state starts again */
        self->optim = NULL;
    }
    if (!rc && !self->optim) {
        self->optim = cf_optim_new(h->m, &oo);
        self->oo = oo;
        if (!self->optim) {
            raise_cf(PyExc_ValueError);
            rc = -1;
        }
    }
    if (!rc) {
        Py_BEGIN_ALLOW_THREADS
        rc = cf_optim_step(self->optim, oo.lr);
        Py_END_ALLOW_THREADS
        if (rc) raise_cf(Error);
    }
    give_model(h);
    if (rc) return NULL;
    Py_RETURN_NONE;
}

static PyObject *model_zero_grad(Model *self, PyObject *unused)
{
    (void)unused;
    Handle *h = take_model(self);
    if (!h) return NULL;
    cf_model_zero_grad(h->m);
    give_model(h);
    Py_RETURN_NONE;
}

static PyObject *model_add_loss(Model *self, PyObject *args)
{
    const char *name;
    if (!PyArg_ParseTuple(args, "s:add_loss", &name)) return NULL;
    cf_loss k = !strcmp(name, "xent") ? CF_LOSS_XENT : !strcmp(name, "mse") ? CF_LOSS_MSE : 0;
    if (!k) {
        PyErr_Format(PyExc_ValueError, "add_loss: 'xent' or 'mse', not '%s'", name);
        return NULL;
    }
    Handle *h = take_model(self);
    if (!h) return NULL;
    int rc = cf_model_add_loss(h->m, k);
    give_model(h);
    if (rc) return raise_cf(ModelError);
    Py_RETURN_NONE;
}

/* ---- executors ---------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    Handle *h;
    cf_exec *e;
    int train, input_grads, nin, nmodel;   /* nin: the executor's inputs, nmodel those of the model */
} Exec;

static PyTypeObject ExecType;

static void exec_dealloc(Exec *self)
{
    cf_exec_free(self->e);   /* a call using it holds a reference: none runs now */
    Py_XDECREF(self->h);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *model_bind(Model *self, PyObject *args, PyObject *kw)
{
    static char *kws[] = {"batch", "train", "input_grads", "loss", NULL};
    int batch, train = 0, input_grads = 0, loss = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "i|$ppp:bind", kws, &batch, &train, &input_grads, &loss)) return NULL;
    if (batch < 1 || batch > 1 << 20) {
        PyErr_Format(PyExc_ValueError, "bind: batch is 1 to 1048576, not %d", batch);
        return NULL;
    }
    Handle *h = take_model(self);
    if (!h) return NULL;
    cf_exec *e;
    unsigned flags = (train ? CF_TRAIN : 0) | (input_grads ? CF_INPUT_GRADS : 0) | (loss ? CF_LOSS : 0);
    Py_BEGIN_ALLOW_THREADS
    e = cf_bind(h->m, batch, flags);
    Py_END_ALLOW_THREADS
    Exec *x = e ? PyObject_New(Exec, &ExecType) : NULL;
    if (x) {
        x->h = (Handle *)Py_NewRef(h);
        x->e = e;
        x->train = train || input_grads;
        x->input_grads = input_grads;
        x->nin = cf_exec_input_count(e);
        x->nmodel = model_inputs(h->m);
    } else if (e) {
        cf_exec_free(e);
    } else {
        raise_cf(ModelError);
    }
    give_model(h);
    return (PyObject *)x;
}

/* A copy of an executor buffer of shape s (batch included). */
static PyObject *copy_of(const float *p, cf_shape s)
{
    npy_intp dims[CF_MAX_DIMS] = {0};
    for (int i = 0; i < s.rank; i++) dims[i] = s.d[i];
    PyArrayObject *a = (PyArrayObject *)PyArray_SimpleNew(s.rank, dims, NPY_FLOAT32);
    if (a) memcpy(PyArray_DATA(a), p, count_of(s) * sizeof(float));
    return (PyObject *)a;
}

/* A whole-batch array for executor buffer shape s: checked, float32 in C order. */
static PyArrayObject *as_batch(PyObject *obj, const char *what, const char *where, cf_shape s, int kind, int batch)
{
    cf_shape per = s;   /* the executor's shapes have the batch first, as a number */
    for (int i = 1; i < s.rank; i++) per.d[i - 1] = s.d[i];
    per.rank = s.rank > 0 ? s.rank - 1 : 0;
    npy_intp n;
    PyArrayObject *a = as_samples(obj, what, where, per, kind, &n);
    if (a && n != batch) {
        PyErr_Format(ShapeError, "%s has %ld samples, and the executor was bound for batches of %d", what, (long)n,
                     batch);
        Py_CLEAR(a);
    }
    return a;
}

static PyObject *exec_forward(Exec *self, PyObject *args, PyObject *kw)
{
    static char *kws[] = {"train", NULL};
    PyObject *o_train = Py_None;
    static PyObject *empty;
    if (!empty && !(empty = PyTuple_New(0))) return NULL;
    if (!PyArg_ParseTupleAndKeywords(empty, kw, "|$O:forward", kws, &o_train)) return NULL;
    int train = o_train == Py_None ? self->train : PyObject_IsTrue(o_train);
    if (train < 0) return NULL;
    Py_ssize_t k = PyTuple_GET_SIZE(args);
    cf_model *m = self->h->m;
    int batch = cf_exec_batch(self->e);
    if (k != self->nin && k != self->nmodel) {
        PyErr_Format(PyExc_TypeError, "forward takes %d array%s (the model's inputs%s), not %zd", self->nin,
                     self->nin == 1 ? "" : "s", self->nin > self->nmodel ? ", then the targets of its loss" : "", k);
        return NULL;
    }
    PyObject *conv = PyList_New(k);
    if (!conv) return NULL;
    for (int i = 0; i < k; i++) {
        char what[32], where[160];
        snprintf(what, sizeof what, "input %d", i);
        const char *name = cf_model_input_name(m, i);
        snprintf(where, sizeof where, "the executor's input '%s'", name);
        int kind = i >= self->nmodel ? (!strcmp(name, "label") ? AS_LABELS : AS_VALUES)
                                     : cf_model_input_classes(m, i) ? AS_INDICES : AS_VALUES;
        PyArrayObject *a = as_batch(PyTuple_GET_ITEM(args, i), what, where, cf_exec_input_shape(self->e, i), kind, batch);
        if (!a) {
            Py_DECREF(conv);
            return NULL;
        }
        PyList_SET_ITEM(conv, i, (PyObject *)a);
    }
    if (take(self->h)) {
        Py_DECREF(conv);
        return NULL;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    for (int i = 0; i < k; i++) {   /* copied: backward reads them after this call */
        float *dst = cf_exec_input(self->e, i, NULL);
        size_t c;
        cf_exec_input(self->e, i, &c);
        memcpy(dst, PyArray_DATA((PyArrayObject *)PyList_GET_ITEM(conv, i)), c * sizeof *dst);
    }
    rc = cf_forward(self->e, train);
    Py_END_ALLOW_THREADS
    give(self->h);
    Py_DECREF(conv);
    if (rc) return raise_cf(DataError);
    int no = cf_exec_output_count(self->e);
    if (no == 1) return copy_of(cf_exec_output(self->e, 0, NULL), cf_exec_output_shape(self->e, 0));
    PyObject *t = PyTuple_New(no);
    for (int o = 0; t && o < no; o++) {
        PyObject *a = copy_of(cf_exec_output(self->e, o, NULL), cf_exec_output_shape(self->e, o));
        if (!a) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, o, a);
    }
    return t;
}

static PyObject *exec_backward(Exec *self, PyObject *args)
{
    if (!self->train) {
        PyErr_SetString(PyExc_ValueError, "backward: the executor was bound without train=True");
        return NULL;
    }
    int no = cf_exec_output_count(self->e);
    Py_ssize_t k = PyTuple_GET_SIZE(args);
    if (k > no) {
        PyErr_Format(PyExc_TypeError, "backward takes at most %d head gradient%s (one per output), not %zd", no,
                     no == 1 ? "" : "s", k);
        return NULL;
    }
    int batch = cf_exec_batch(self->e);
    PyObject *conv = PyList_New(k);
    if (!conv) return NULL;
    for (int o = 0; o < k; o++) {
        PyObject *g = PyTuple_GET_ITEM(args, o);
        if (g == Py_None) {
            PyList_SET_ITEM(conv, o, Py_NewRef(Py_None));
            continue;
        }
        char what[32];
        snprintf(what, sizeof what, "head gradient %d", o);
        PyArrayObject *a = as_batch(g, what, "the output", cf_exec_output_shape(self->e, o), AS_VALUES, batch);
        if (!a) {
            Py_DECREF(conv);
            return NULL;
        }
        PyList_SET_ITEM(conv, o, (PyObject *)a);
    }
    if (take(self->h)) {
        Py_DECREF(conv);
        return NULL;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    for (int o = 0; o < no; o++) {
        size_t c;
        float *hg = cf_exec_output_grad(self->e, o, &c);
        PyObject *g = o < k ? PyList_GET_ITEM(conv, o) : Py_None;
        if (g == Py_None) memset(hg, 0, c * sizeof *hg);
        else memcpy(hg, PyArray_DATA((PyArrayObject *)g), c * sizeof *hg);
    }
    rc = cf_backward(self->e);
    Py_END_ALLOW_THREADS
    give(self->h);
    Py_DECREF(conv);
    if (rc) return raise_cf(Error);
    if (!self->input_grads) Py_RETURN_NONE;
    int ni = self->nmodel;
    PyObject *t = PyTuple_New(ni);
    for (int i = 0; t && i < ni; i++) {
        const float *g = cf_exec_input_grad(self->e, i, NULL);
        PyObject *a = g ? copy_of(g, cf_exec_input_shape(self->e, i)) : Py_NewRef(Py_None);
        if (!a) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, a);
    }
    if (t && ni == 1) {
        PyObject *a = Py_NewRef(PyTuple_GET_ITEM(t, 0));
        Py_DECREF(t);
        return a;
    }
    return t;
}

static PyObject *exec_loss(Exec *self, void *c)
{
    (void)c;
    return PyFloat_FromDouble(cf_exec_loss(self->e));
}

static PyObject *exec_batch(Exec *self, void *c)
{
    (void)c;
    return PyLong_FromLong(cf_exec_batch(self->e));
}

static PyObject *exec_reset_state(Exec *self, PyObject *unused)
{
    (void)unused;
    if (take(self->h)) return NULL;
    cf_exec_reset_state(self->e);
    give(self->h);
    Py_RETURN_NONE;
}

static PyObject *exec_update(Exec *self, PyObject *args)
{
    double lr;
    if (!PyArg_ParseTuple(args, "d:update", &lr)) return NULL;
    if (!(lr >= 0 && lr <= 1e6)) {
        PyErr_SetString(PyExc_ValueError, "update: lr is from 0 to 1e6");
        return NULL;
    }
    if (!self->train) {
        PyErr_SetString(PyExc_ValueError, "update: the executor was bound without train=True");
        return NULL;
    }
    if (take(self->h)) return NULL;
    int rc = cf_update_sgd(self->e, (float)lr);
    give(self->h);
    if (rc) return raise_cf(Error);
    Py_RETURN_NONE;
}

static PyMethodDef exec_methods[] = {
    {"forward", (PyCFunction)(void (*)(void))exec_forward, METH_VARARGS | METH_KEYWORDS,
     "forward(*inputs, train=None): run the graph on one batch of each input (then, for an executor of a model with "
     "a loss bound with train or loss, the labels or targets); returns the output (a tuple for several), a copy. "
     "train: training behaviour (dropout, batch statistics); by default as bound."},
    {"backward", (PyCFunction)exec_backward, METH_VARARGS,
     "backward(*head_grads): back-propagate the last forward, from the loss (if the model has one) plus a head "
     "gradient per output (None or left out: zero). Parameter gradients accumulate in m.grads. Returns the inputs' "
     "gradients when bound with input_grads=True, else None."},
    {"update", (PyCFunction)exec_update, METH_VARARGS, "update(lr): p -= lr * grad for every parameter, then grad = 0."},
    {"reset_state", (PyCFunction)exec_reset_state, METH_NOARGS,
     "The state a stateful unrolled model carries from one forward to the next goes back to its start."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef exec_getset[] = {
    {"loss", (getter)exec_loss, NULL, "The loss of the last forward (nan when not computed).", NULL},
    {"batch", (getter)exec_batch, NULL, "The batch size it was bound for.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ExecType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cflux.Executor",
    .tp_basicsize = sizeof(Exec),
    .tp_dealloc = (destructor)exec_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A model bound to a batch size (Model.bind): forward, backward, update.",
    .tp_methods = exec_methods,
    .tp_getset = exec_getset,
};

/* ---- the model type --------------------------------------------------------------- */

static PyObject *model_repr(Model *self)
{
    if (!self->h) return PyUnicode_FromString("<cflux.Model (closed)>");
    cf_model *m = self->h->m;
    char in[96], out[96];
    cf_shape_format(cf_model_input_shape(m, 0), in, sizeof in);
    cf_shape_format(cf_model_output_shape(m, 0), out, sizeof out);
    return PyUnicode_FromFormat("<cflux.Model %s -> %s (%s), %zu weights>", in, out, cf_model_output_op(m, 0),
                                cf_model_weight_count(m));
}

static PyMethodDef model_methods[] = {
    {"summary", (PyCFunction)(void (*)(void))model_summary, METH_VARARGS | METH_KEYWORDS,
     "summary(batch=0, *, depth=1, json=False) -> str: the table of layers, shapes, parameters and FLOPs "
     "(cflux summary)."},
    {"predict", (PyCFunction)(void (*)(void))model_predict, METH_VARARGS | METH_KEYWORDS,
     "predict(x, *, batch=256) -> array: the model's output for each sample of x (float32, (n, ...)); a tuple for "
     "a model of several outputs. The input standardisation of a model trained with normalize=True is applied, and "
     "a regression's targets are given back in their own units."},
    {"evaluate", (PyCFunction)(void (*)(void))model_evaluate, METH_VARARGS | METH_KEYWORDS,
     "evaluate(x, y, *, batch=256, top=0, loss=None) -> dict: the loss, accuracy and metrics cflux eval gives."},
    {"fit", (PyCFunction)(void (*)(void))model_fit, METH_VARARGS | METH_KEYWORDS,
     "fit(x, y=None, *, epochs=10, batch=64, optim='adam', lr=None, wd=None, momentum=None, clip=None, "
     "schedule='cosine', val=0, seed=0, loss=None, normalize=False, patience=0, keep_best=None, limit_batches=0, "
     "augment=None, label_smoothing=0, test=None, save=None, resume=None, callbacks=None, verbose=True, "
     "label_col=None, features=None, classes=None) -> list of dicts\n\n"
     "Train as cflux train does, with its options and defaults. x: float32 samples (the first axis), y: class "
     "indices or regression targets; or x a data spec of the tool ('csv:train.csv,test.csv', 'fashion-mnist', "
     "'images:DIR', 'text:FILE'; label_col and features for CSV) and no y. test=(x, y) is scored after every "
     "epoch. save writes the checkpoint after every epoch and when interrupted; resume goes on from one. "
     "callbacks: callables given each epoch's figures; one returning True stops. classes: the classes' names. "
     "Returns the figures of every epoch. Ctrl-C stops after the step and raises KeyboardInterrupt."},
    {"bind", (PyCFunction)(void (*)(void))model_bind, METH_VARARGS | METH_KEYWORDS,
     "bind(batch, *, train=False, input_grads=False, loss=False) -> Executor."},
    {"update", (PyCFunction)(void (*)(void))model_update, METH_VARARGS | METH_KEYWORDS,
     "update(lr=None, *, optim='sgd', momentum=None, wd=None, clip=None): one step of the optimizer on the "
     "accumulated gradients, which are then zeroed. The optimizer's state (momentum, Adam's moments) is kept between "
     "calls while its settings stay the same."},
    {"zero_grad", (PyCFunction)model_zero_grad, METH_NOARGS, "Set every accumulated gradient to zero."},
    {"add_loss", (PyCFunction)model_add_loss, METH_VARARGS,
     "add_loss('xent' or 'mse'): give the model its training loss: a new last input (the labels or targets) that "
     "executors bound afterwards take."},
    {"save", (PyCFunction)model_save, METH_VARARGS,
     "save(path): after fit, the run's checkpoint (cflux train --save writes the same bytes); else the parameters."},
    {"load_params", (PyCFunction)(void (*)(void))model_load_params, METH_VARARGS | METH_KEYWORDS,
     "load_params(path, *, partial=False): weights from a checkpoint or a parameter file, matched by name."},
    {"set_seed", (PyCFunction)model_set_seed, METH_VARARGS,
     "set_seed(seed): the seed of initialisation (before the weights are first drawn) and of dropout."},
    {"close", (PyCFunction)model_close, METH_NOARGS,
     "Free the model now (its parameters' memory once no view of them is left)."},
    {"__enter__", (PyCFunction)model_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)model_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef model_getset[] = {
    {"params", (getter)model_params, NULL, "{name: array}: views of the parameters' memory (writing one changes the "
                                           "model).", NULL},
    {"grads", (getter)model_grads, NULL, "{name: array}: views of the accumulated gradients (after a training bind).",
     NULL},
    {"states", (getter)model_states, NULL, "{name: array}: views of the running statistics (batch normalisation).",
     NULL},
    {"inputs", (getter)model_inputs_get, NULL, "[(name, shape)]: the inputs, None for the batch.", NULL},
    {"outputs", (getter)model_outputs_get, NULL, "[(op, shape)]: the outputs, None for the batch.", NULL},
    {"weights", (getter)model_weights, NULL, "The number of trainable and frozen scalars.", NULL},
    {"closed", (getter)model_closed, NULL, "Whether close() was called.", NULL},
    {"history", (getter)model_history, NULL, "[{epoch, train_loss, ...}]: the epochs of the last fit, those of the run "
                                            "it resumed included; kept after an interrupted fit too.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ModelType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "cflux.Model",
    .tp_basicsize = sizeof(Model),
    .tp_dealloc = (destructor)model_dealloc,
    .tp_repr = (reprfunc)model_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "A compiled model (cflux.load).",
    .tp_methods = model_methods,
    .tp_getset = model_getset,
};

/* ---- module functions --------------------------------------------------------- */

static PyObject *mod_load(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    static char *kws[] = {"path", "seed", NULL};
    PyObject *path, *o_seed = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|$O:load", kws, PyUnicode_FSConverter, &path, &o_seed)) return NULL;
    unsigned long long seed = 0;
    if (o_seed && o_seed != Py_None) {
        seed = PyLong_AsUnsignedLongLong(o_seed);
        if (PyErr_Occurred()) {
            Py_DECREF(path);
            return NULL;
        }
    }
    cf_model *m;
    Py_BEGIN_ALLOW_THREADS
    m = cf_model_load(PyBytes_AS_STRING(path));
    if (m) cf_model_set_seed(m, seed);
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    return model_wrap(m);
}

static PyObject *mod_loads(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    static char *kws[] = {"source", "filename", "seed", NULL};
    const char *src, *name = "<string>";
    Py_ssize_t len;
    PyObject *o_seed = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s#|s$O:loads", kws, &src, &len, &name, &o_seed)) return NULL;
    if ((size_t)len != strlen(src)) {
        PyErr_SetString(PyExc_ValueError, "loads: the source holds a NUL character");
        return NULL;
    }
    unsigned long long seed = 0;
    if (o_seed && o_seed != Py_None && (seed = PyLong_AsUnsignedLongLong(o_seed), PyErr_Occurred())) return NULL;
    cf_model *m;
    Py_BEGIN_ALLOW_THREADS
    m = cf_model_parse(src, name);
    if (m) cf_model_set_seed(m, seed);
    Py_END_ALLOW_THREADS
    return model_wrap(m);
}

static PyObject *mod_load_trained(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *path;
    if (!PyArg_ParseTuple(args, "O&:load_params", PyUnicode_FSConverter, &path)) return NULL;
    cf_model *m;
    Py_BEGIN_ALLOW_THREADS
    m = cf_model_load_trained(PyBytes_AS_STRING(path));
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    return model_wrap(m);
}

static PyObject *mod_version(PyObject *mod, PyObject *unused)
{
    (void)mod;
    (void)unused;
    return PyUnicode_FromString(cf_version());
}

static PyObject *mod_set_threads(PyObject *mod, PyObject *args)
{
    (void)mod;
    int n;
    if (!PyArg_ParseTuple(args, "i:set_threads", &n)) return NULL;
    if (n < 1 || n > 1024) {
        PyErr_Format(PyExc_ValueError, "set_threads: 1 to 1024, not %d", n);
        return NULL;
    }
    cf_set_threads(n);
    Py_RETURN_NONE;
}

static PyObject *mod_threads(PyObject *mod, PyObject *unused)
{
    (void)mod;
    (void)unused;
    return PyLong_FromLong(cf_threads());
}

static PyObject *mod_cpu(PyObject *mod, PyObject *unused)
{
    (void)mod;
    (void)unused;
    return Py_BuildValue("{sssssssd}", "name", cf_cpu_name(), "isa", cf_cpu_isa(), "gemm", cf_gemm_name(),
                         "peak_gflops", cf_cpu_peak_gflops());
}

static PyMethodDef mod_methods[] = {
    {"load", (PyCFunction)(void (*)(void))mod_load, METH_VARARGS | METH_KEYWORDS,
     "load(path, *, seed=0): compile a model file (.flux)."},
    {"loads", (PyCFunction)(void (*)(void))mod_loads, METH_VARARGS | METH_KEYWORDS,
     "loads(source, filename='<string>', *, seed=0): compile a model from its source text."},
    {"load_trained", (PyCFunction)mod_load_trained, METH_VARARGS,
     "load_trained(path): a model and its weights from one checkpoint or parameter file."},
    {"version", mod_version, METH_NOARGS, "cflux's version."},
    {"set_threads", mod_set_threads, METH_VARARGS, "set_threads(n): the threads cflux computes with."},
    {"threads", mod_threads, METH_NOARGS, "The threads cflux computes with."},
    {"cpu", mod_cpu, METH_NOARGS, "What cflux found of this CPU: name, vector ISA, matrix product, peak GFLOP/s."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, "cflux._cflux", "cflux's C API for Python (use the cflux package).", -1, mod_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__cflux(void)
{
    import_array();
    if (PyType_Ready(&HandleType) || PyType_Ready(&ModelType) || PyType_Ready(&ExecType)) return NULL;
    PyObject *errors = PyImport_ImportModule("cflux.errors");
    if (!errors) return NULL;
    Error = PyObject_GetAttrString(errors, "Error");
    ModelError = PyObject_GetAttrString(errors, "ModelError");
    ShapeError = PyObject_GetAttrString(errors, "ShapeError");
    DataError = PyObject_GetAttrString(errors, "DataError");
    Py_DECREF(errors);
    if (!Error || !ModelError || !ShapeError || !DataError) return NULL;
    PyObject *mod = PyModule_Create(&moddef);
    if (!mod) return NULL;
    if (PyModule_AddObjectRef(mod, "Model", (PyObject *)&ModelType) ||
        PyModule_AddObjectRef(mod, "Executor", (PyObject *)&ExecType)) {
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
