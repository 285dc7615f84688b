/* cflux.h - deep learning in C: a model is a static graph, checked before it runs.
 *
 * A model (cf_model) is a dataflow graph with named parameters. Write it in the
 * notation (cf_model_load, docs/notation.md) or build it with the graph calls below.
 * Binding it for a batch size (cf_bind) infers every shape, plans memory and gives an
 * executor (cf_exec) with buffers for inputs, outputs and gradients; cf_forward,
 * cf_backward and cf_update_sgd run on it. Executors of one model share its
 * parameters. Above that sit datasets, optimizers and the training loop (cf_fit), the
 * same that `cflux train` runs:
 *
 *     cf_model *m = cf_model_load("models/mlp.flux");
 *     cf_dataset *train, *test;
 *     cf_data_open("fashion-mnist", 0, &train, &test);
 *     cf_fit_opts o = cf_fit_defaults();
 *     o.optim = cf_optim_defaults("adam");
 *     cf_trainer *t = cf_trainer_new(m, train, &o);   // adds the loss, binds
 *     cf_fit(t, train, test);                         // (check every return)
 *     cf_trainer_save(t, "mlp.ckpt");
 *
 * Headings below: shapes; errors and the library; files; models; the notation; building
 * graphs in C; executors; data; optimizers; training.
 *
 * Conventions: float32, row-major, batch first. Every value carries a leading batch
 * dimension B that the graph calls never write: an input declared with shape (784)
 * holds (B, 784). Parameters and constants have no batch dimension. B is chosen at
 * bind time; error messages write it as "B".
 *
 * Failures never exit: calls return NULL or non-zero and cf_last_error() says what
 * went wrong, naming the op, the shapes and the line of code that built it.
 *
 * A worked example in C: train a 784-128-10 classifier by hand.
 *
 *     cf_model *m = cf_model_new();
 *     cf_node *x  = cf_input(m, "x", CF_SHAPE(784));              // (B, 784)
 *     cf_node *y  = cf_input(m, "y", CF_SCALAR);                  // (B) class indices
 *     cf_node *W1 = cf_param(m, "1.W", CF_SHAPE(784, 128), CF_GLOROT);
 *     cf_node *b1 = cf_param(m, "1.b", CF_SHAPE(1, 128), CF_ZEROS);
 *     cf_node *W2 = cf_param(m, "2.W", CF_SHAPE(128, 10), CF_GLOROT);
 *     cf_node *b2 = cf_param(m, "2.b", CF_SHAPE(1, 10), CF_ZEROS);
 *     cf_node *h  = cf_relu(m, cf_add(m, cf_matmul(m, x, W1), b1));  // (B, 128)
 *     cf_node *z  = cf_add(m, cf_matmul(m, h, W2), b2);             // (B, 10)
 *     cf_node *loss = cf_softmax_xent(m, z, y);                    // mean over the batch
 *     cf_output(m, cf_node_input(loss, 0));                 // output 0: probabilities (B, 10)
 *     cf_output(m, loss);                                   // output 1: the loss ()
 *
 *     cf_exec *e = cf_bind(m, 64, CF_TRAIN);
 *     if (!e) { fprintf(stderr, "%s\n", cf_last_error()); return 1; }
 *     for (int step = 0; step < 1000; step++) {
 *         fill(cf_exec_input(e, 0, NULL), cf_exec_input(e, 1, NULL));  // your data
 *         cf_forward(e, 1);
 *         cf_backward(e);                                   // d loss = 1 by default
 *         cf_update_sgd(e, 0.1f);
 *         printf("%f\n", *cf_exec_output(e, 1, NULL));
 *     }
 *     cf_exec_free(e);
 *     cf_model_free(m);
 */
#ifndef CFLUX_H
#define CFLUX_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(CFLUX_BUILDING) && defined(__GNUC__)
#define CF_API __attribute__((visibility("default")))
#else
#define CF_API
#endif

/* ---- Shapes ------------------------------------------------------------------ */

#define CF_MAX_DIMS 6

/* A shape: rank dimensions, outermost first. In shapes that cflux reports for graph
 * values, d[0] == CF_BATCH marks the batch dimension. */
typedef struct cf_shape {
    int rank;
    int d[CF_MAX_DIMS];
} cf_shape;

#define CF_BATCH (-1)

#define CF_NARGS_(...) CF_NARGS_N_(__VA_ARGS__, 6, 5, 4, 3, 2, 1, 0)
#define CF_NARGS_N_(a, b, c, d, e, f, n, ...) n
/* CF_SHAPE(784), CF_SHAPE(28, 28), ...: up to six dimensions. */
#define CF_SHAPE(...) ((cf_shape){CF_NARGS_(__VA_ARGS__), {__VA_ARGS__}})
/* The shape of one number: per sample, an input of this shape is (B). */
#define CF_SCALAR ((cf_shape){0, {0}})

/* Elements in a shape (a CF_BATCH dimension counts as 1). */
CF_API size_t cf_shape_count(cf_shape s);

/* Write a shape as "(B, 784)" (CF_BATCH in front as B); returns buf. */
CF_API char *cf_shape_format(cf_shape s, char *buf, size_t size);

/* ---- Errors and the library ------------------------------------------------------ */

/* The last failure on this thread: "error: ..." plus one trace line per enclosing
 * call ("  in Affine at model.c:42"). Empty when there was none. */
CF_API const char *cf_last_error(void);

CF_API const char *cf_version(void);        /* "0.1.0" */

/* Threads. Global state is small: the thread pool and the matrix-product engine
 * (cf_set_threads, cf_set_gemm: call them while no other thread is in a cflux call)
 * and cf_last_error, which is per thread. Otherwise:
 *   - Calls on different models, their executors, optimizers and trainers may run at
 *     once on different threads. The pool runs one parallel region at a time; a
 *     kernel that finds it taken by another thread runs on its own thread, split
 *     into the same tasks, so results are bitwise those of one thread at a time.
 *   - A model's executors share its parameters, gradients and state. cf_forward in
 *     evaluation mode may run on several executors of one model at once. In
 *     training mode it updates the model's state (cf_model_state_count), if it has
 *     any; that, cf_backward, cf_update_sgd, cf_optim_step and cf_fit write the
 *     model, and building, cf_bind (also inside cf_trainer_new, cf_evaluate and
 *     cf_predict), loading parameters, cf_model_add_loss and cf_model_zero_grad
 *     change it: each needs the model and all its executors to itself.
 *   - One executor, optimizer or trainer is used by one thread at a time, except
 *     cf_trainer_stop, which any thread or a signal handler may call.
 *   - A dataset is only read once made: any number of threads may use one at once.
 * Threads of yours may have small stacks (256 KiB is tested): cflux's static
 * thread-local storage is a few KiB. A thread running the built-in GEMM allocates
 * 656 KiB of packing buffers on its first product (cf_bind does it for the binding
 * thread, so a training step allocates nothing), freed when the thread exits; if
 * that allocation fails, its products take a slower loop without them.
 * Signals: cflux installs no handlers. While it writes a file, the writing thread
 * holds back SIGINT, SIGTERM, SIGHUP and SIGQUIT (see Files) and the pool's threads
 * block them for good; a library such as OpenBLAS may run threads of its own that
 * take a signal sent to the process, so a program that exits from a handler should
 * pass the signal on to its main thread (pthread_kill), as the cflux tool does. */

/* Threads for the engine's kernels, the calling thread included. The default is
 * $CFLUX_THREADS, else the CPUs this process may use. n <= 0 restores the default.
 * Not while another thread is in a cflux call. */
CF_API void cf_set_threads(int n);
CF_API int  cf_threads(void);

/* Which matrix-product engine runs. The built-in engine has kernels per instruction
 * set: "builtin-avx512", "builtin-avx2" and "builtin-portable" (any CPU); "builtin"
 * means the widest this CPU runs. "openblas" is there when the library was built
 * with it. The default follows what the CPU runs, read with cpuid, not OpenBLAS's
 * own detection (which falls back to generic SSE3 kernels on CPUs it does not know):
 * the built-in AVX-512 or AVX2 kernels where the CPU has them, else OpenBLAS when it
 * has kernels for this CPU, else builtin-portable. $CFLUX_GEMM names an engine
 * instead. cf_set_gemm returns 0, or -1 for an engine this build or CPU does not
 * have; cf_set_gemm(NULL) goes back to the default, reading $CFLUX_GEMM again, and
 * returns -1 with the list of engines when that names none (the CPU's choice runs). cf_gemm_name gives the engine that runs ("builtin-avx2", "openblas-Zen");
 * cf_gemm_why says why it was chosen. */
CF_API int cf_set_gemm(const char *name);
CF_API const char *cf_gemm_name(void);
CF_API const char *cf_gemm_why(void);

/* Floating-point operations (2 per multiply-add) done by matrix products and by the
 * direct convolution kernels in this process so far, over all threads: for measuring
 * GFLOP/s. */
CF_API double cf_gemm_flops(void);

/* This CPU as cpuid tells it: its brand string ("AMD EPYC 7B12"), and the features
 * that kernels use ("avx2 fma"; AVX-512's as "avx512f avx512bw ..."). */
CF_API const char *cf_cpu_name(void);
CF_API const char *cf_cpu_isa(void);

/* One core's float32 peak in GFLOP/s (2 per multiply-add), measured now (about 50 ms)
 * with the widest fused multiply-adds the CPU runs. The figure that kernel speeds are
 * judged against: a busy machine reads lower. */
CF_API double cf_cpu_peak_gflops(void);

/* The memory limit. The library's big blocks (dataset arrays, parameters, their
 * gradients, optimizer state, executors' activation memory) are counted, process-wide
 * and thread-safely, against a limit; a request that would pass it fails before
 * anything is allocated, with a message that names what it was for ("error: data.csv:
 * the data needs 9.1 GB, above the memory limit of 4.0 GB (CFLUX_MAX_MEMORY or
 * --max-memory)"; for parameters, the largest one and where the model made it).
 * The default limit is $CFLUX_MAX_MEMORY, read at first use: bytes, or a number with
 * K, M, G or T (powers of 1024, as messages print them): 512M, 4G, 1.5G. Unset or
 * empty, it is the memory the process can have: the smallest of MemAvailable (else the
 * physical memory), its cgroups' limits and RLIMIT_AS and RLIMIT_DATA when set. A
 * malformed value is not ignored: every counted request fails with a message saying
 * what is wrong with it, until a limit is set here. cf_set_memory_limit(bytes) sets the limit; 0 restores the default,
 * reading $CFLUX_MAX_MEMORY again (0, or -1 with the message when it is malformed).
 * A lower limit than what is in use refuses new requests only. cf_memory_limit gives
 * the limit in bytes (0, with the message, when $CFLUX_MAX_MEMORY is malformed);
 * cf_memory_in_use the bytes counted now. */
CF_API int    cf_set_memory_limit(size_t bytes);
CF_API size_t cf_memory_limit(void);
CF_API size_t cf_memory_in_use(void);

/* ---- Files ------------------------------------------------------------------------
 *
 * Every file cflux writes (checkpoints, parameters, the tool's logs and plots) goes
 * through one writer, which looks first at what the path names:
 *   - a regular file, or nothing yet: written crash-safely. A temporary file beside
 *     the target, created so that a file or a symbolic link planted there is never
 *     followed, is written, flushed, fsync'd and renamed over the target. A crash
 *     leaves the old file or the new one, never a mix, and a failure leaves no
 *     temporary file behind. The new file keeps the old one's mode. A file the user
 *     may not write is refused, and so is one with no write permission at all (0444)
 *     even for root. A symbolic link to a regular file is written at that file.
 *   - /dev/stdout, /dev/stderr, /dev/fd/N: written through the process's descriptor.
 *   - a character device (/dev/null, a terminal) or a FIFO: written through, in
 *     place; nothing is renamed over it.
 *   - a directory, a block device, a socket, a link to nothing: refused.
 * Between create and commit (or abort) the calling thread holds back SIGINT, SIGTERM,
 * SIGHUP and SIGQUIT, so that a signal cannot leave a temporary file: it arrives
 * right after. Temporary files that a killed process left beside the target are
 * removed when it is next written. */

typedef struct cf_file cf_file;

CF_API cf_file *cf_file_create(const char *path);  /* NULL and the error (which names why) */
CF_API FILE    *cf_file_stream(cf_file *f);        /* write here */
CF_API int      cf_file_commit(cf_file *f);        /* replace path with what was written; frees f; 0 or -1 */
CF_API void     cf_file_abort(cf_file *f);         /* keep the old file; frees f */
/* 1 when f writes through to a device, a FIFO or a stream of the process (each commit
 * adds to what it was sent before), 0 when it replaces a file. */
CF_API int      cf_file_through(const cf_file *f);
/* Whether path could be written now (for a regular file, a temporary is made beside
 * it and removed): 0, or -1 with the reason ("the directory /x does not exist", "it
 * is a directory", "it is read-only (mode 0444)"). */
CF_API int      cf_file_check(const char *path);

/* One writer per file: hold path against every other process that takes the same
 * lock (two training runs saving to one checkpoint). The lock is a file "PATH.lock"
 * beside the target, removed on release; one left by a killed process holds nothing
 * and is taken over. A device, a FIFO or a stream needs no lock (a lock is returned
 * all the same). NULL and the error when another process holds it ("another cflux
 * (process 1234) is writing it"). */
typedef struct cf_file_lock cf_file_lock;

CF_API cf_file_lock *cf_file_lock_take(const char *path);
CF_API void          cf_file_lock_release(cf_file_lock *l);   /* NULL is fine */

/* ---- Models ------------------------------------------------------------------------ */

typedef struct cf_model cf_model;   /* a graph and its named parameters */
typedef struct cf_node cf_node;     /* one value of a graph, owned by its model */
typedef struct cf_exec cf_exec;     /* a model bound to a batch size */

CF_API cf_model *cf_model_new(void);
CF_API void      cf_model_free(cf_model *m);

/* The seed for parameter initialisation (and, later, dropout and shuffling).
 * Same seed, same model: bitwise the same parameters. Default 0. Call it before the
 * first bind. */
CF_API void cf_model_set_seed(cf_model *m, uint64_t seed);

/* Parameters, in the order they were declared. The values live in the model and are
 * shared by all its executors; they exist once the model is sealed (by its first bind
 * or by cf_model_init_params). */
CF_API int         cf_model_param_count(const cf_model *m);
CF_API const char *cf_model_param_name(const cf_model *m, int i);
CF_API cf_shape    cf_model_param_shape(const cf_model *m, int i);
CF_API int         cf_model_param_index(const cf_model *m, const char *name); /* -1 if none */
CF_API float      *cf_model_param_data(cf_model *m, int i);  /* NULL before sealing */
CF_API float      *cf_model_param_grad(cf_model *m, int i);  /* NULL until a CF_TRAIN bind */
CF_API size_t      cf_model_weight_count(const cf_model *m);  /* scalars in all parameters */

/* State: values the model keeps and updates that are not trained (batch
 * normalisation's running mean and variance), in the order they were declared
 * (cf_state). They live in the model beside the parameters, are shared by its
 * executors, are saved and loaded with the parameters and in checkpoints, and no
 * optimizer, weight decay or gradient touches them. A forward in training mode
 * (cf_forward(e, 1)) updates them (not those of a frozen batchnorm: CF_GRAD_NONE). */
CF_API int         cf_model_state_count(const cf_model *m);
CF_API const char *cf_model_state_name(const cf_model *m, int i);
CF_API cf_shape    cf_model_state_shape(const cf_model *m, int i);
CF_API int         cf_model_state_index(const cf_model *m, const char *name); /* -1 if none */
CF_API float      *cf_model_state_data(cf_model *m, int i);  /* NULL before sealing */

/* Inputs and outputs, with shapes that mark the batch dimension with CF_BATCH (known
 * once the model's shapes are inferred: after cf_model_load, or a first bind). */
CF_API int         cf_model_input_count(const cf_model *m);
CF_API int         cf_model_output_count(const cf_model *m);
CF_API const char *cf_model_input_name(const cf_model *m, int i);
CF_API cf_shape    cf_model_input_shape(const cf_model *m, int i);
CF_API cf_shape    cf_model_output_shape(const cf_model *m, int i);
CF_API const char *cf_model_output_op(const cf_model *m, int i);   /* "softmax", ... */
/* V when input i holds class indices for an embedding (cf_embedding, the notation's
 * embedding and Embedding) with a table of V rows, seen through reshape, flatten and
 * slice; the smallest V if it feeds several; 0 when it holds ordinary values. Tools
 * fill such an input with whole numbers in 0..V-1 and check that a vocabulary fits. */
CF_API int         cf_model_input_classes(const cf_model *m, int i);

/* Seal the graph and initialise its parameters from the seed; no node can be added
 * afterwards. cf_bind does this for you. 0 or -1. */
CF_API int cf_model_init_params(cf_model *m);

/* How backward treats a parameter's gradient (MXNet's grad_req):
 *   CF_GRAD_ADD   accumulate over backward calls until an update zeroes it (default)
 *   CF_GRAD_WRITE each backward overwrites it
 *   CF_GRAD_NONE  no gradient: the parameter is frozen (optimizers, weight decay
 *                 and clipping leave it alone; a batchnorm whose scale and shift
 *                 are both frozen normalises with its running statistics, in
 *                 training too, and leaves them unchanged: PyTorch's module.eval())
 * name NULL sets every parameter. Before the first bind. 0, or -1 for an unknown name. */
typedef enum cf_grad_req { CF_GRAD_ADD = 0, CF_GRAD_WRITE = 1, CF_GRAD_NONE = 2 } cf_grad_req;
CF_API int cf_model_set_grad_req(cf_model *m, const char *name, cf_grad_req req);

/* Set every accumulated parameter gradient to zero. */
CF_API void cf_model_zero_grad(cf_model *m);

/* Parameters in the safetensors format (float32, by name), written crash-safe.
 * Loading matches by name: a parameter that the file lacks, a tensor the model does
 * not have, or a shape that differs is an error, and nothing is changed. With
 * CF_LOAD_PARTIAL the names that match are loaded (as PyTorch's strict=False), and
 * afterwards cf_last_error() says, in "note:" lines, how many were loaded, which were
 * not (left as they were) and the file's tensors the model does not have (empty if
 * nothing was left out). A shape mismatch is an error naming the parameter, unless
 * CF_LOAD_MATCHING is given too: then only what matches in name and shape is loaded,
 * and the others are listed with both shapes (fine-tuning with a new head). A load
 * that leaves anything out (of the model or of the file) keeps the model's class
 * names. 0 or -1. */
#define CF_LOAD_PARTIAL 1u
#define CF_LOAD_MATCHING 2u
CF_API int cf_model_save_params(cf_model *m, const char *path);
CF_API int cf_model_load_params(cf_model *m, const char *path);
CF_API int cf_model_load_params_ex(cf_model *m, const char *path, unsigned flags);
/* A model and its weights from one file: a checkpoint (cf_trainer_save) or a parameter
 * file (cf_model_save_params) of a model compiled from the notation keeps the model's
 * source (metadata "model_source", and its file name "model_file"), which is compiled
 * again (errors point into the file name it had), and the weights, standardisation,
 * class names and notes are loaded into it. NULL with the error: not such a file, or
 * one without the source (a model built in C, a PyTorch file). */
CF_API cf_model *cf_model_load_trained(const char *path);

/* Write the graph in Graphviz DOT to path ("-" for stdout). 0 or -1. */
CF_API int cf_model_dump_dot(cf_model *m, const char *path);

/* ---- The notation ------------------------------------------------------------------
 *
 * A model written in cflux's notation (a .flux file; see docs/notation.md) compiles to
 * the same graph as the C calls below would build. Errors point into the model's
 * source: "model.flux:3:14: error: expected ')' but found '='", or, for a shape that
 * does not fit, the message and one "in NAME at FILE:LINE:COL" line per enclosing
 * call. Inputs are numbered in the order of the forward function's arguments, outputs
 * in the order of its result. */
CF_API cf_model *cf_model_parse(const char *src, const char *filename);  /* text */
CF_API cf_model *cf_model_load(const char *path);                        /* a file */
/* A file's model with every unroll(m, n) run over `steps` steps instead of n (0: as
 * written). Its parameters and states have the same names, so a checkpoint of the
 * model as written loads into it: steps 1 with batch 1 gives a one-step model that
 * generates a sequence one element at a time, carrying its state between calls. */
CF_API cf_model *cf_model_load_steps(const char *path, int steps);
/* What the compiler noted about a model that compiled but may not do what was meant,
 * one line each ending in a newline, for a tool to print: "note: GRU at m.flux:1:26
 * keeps a state but runs outside unroll: ..." (a recurrent net read outside unroll
 * starts from its state's start at every forward). "" when none, and for a model built
 * in C. Not kept with the weights (those notes are cf_model_info's). A model that does
 * not compile has the notes made before its error after it, in cf_last_error(). */
CF_API const char *cf_model_compile_notes(const cf_model *m);

/* A model that reads a window of T positions through causal attention (a GPT:
 * softmax(q * transpose(k, 2, 3), causal = true) * v in its blocks, positions(P, x) for
 * where each position is), loaded to read one position per forward instead: its input
 * is (B, 1), its output the window model's at that position (B, 1, ...), to rounding.
 * The keys and values of the positions read so far are kept in a cache of T per
 * attention (carried state of the executor, as a recurrent model's is), so a forward
 * costs one position's work, not T's: a program generates text by binding it at batch
 * 1, writing a character's index into input 0, calling cf_forward(e, 0) and drawing
 * the next from output 0, again and again. Position p of a sample (0 after
 * cf_bind and cf_exec_reset_state, one more after each forward) sees positions 0..p;
 * after T forwards the cache is full and the next forward fails with a message, until
 * cf_exec_reset_state empties it (to go on past T, empty it and read the last
 * characters again). The parameters have the window model's names: its checkpoint
 * loads (cf_model_load_params). NULL with the error: no causal attention, or a
 * model that does not run one position at a time (a shape fixed at T). The model
 * must mix positions only in its attention; cflux sample checks that on its prime text. */
CF_API cf_model *cf_model_load_cached(const char *path);
/* The same, reading n positions a forward (1 <= n <= T): input (B, n), output (B, n,
 * ...), the outputs at those n positions, each seeing the cache and the positions
 * before it among the n; the position goes on by n. To read a prompt in one forward
 * and then generate one position at a time, bind both forms and move the caches from
 * one executor to the other with cf_exec_state_copy (the same states, in the same
 * order). */
CF_API cf_model *cf_model_load_cached_n(const char *path, int n);
/* The positions a cached model's caches hold (T), or 0 for any other model. */
CF_API int cf_model_cache_size(const cf_model *m);

/* Print a model file's forward function as a listing with the shape of every value
 * (batch > 0 writes the batch size for B), marking the step where shapes stop
 * fitting. 0, or -1 with the error (the listing up to that point printed first). */
CF_API int cf_model_print_shapes(const char *path, int batch, FILE *out);

/* ---- Building graphs in C ----------------------------------------------------------
 *
 * Every call below is a macro over a cf_*_at function that also takes the source file
 * and line, so that errors point at the line of C that built the failing node. A call
 * given a NULL input returns NULL: check once at the end (cf_bind reports the first
 * failure). Shapes are checked by cf_bind, where the batch size is known. */

typedef enum cf_init_kind {
    CF_INIT_GLOROT = 0,  /* uniform(±sqrt(6 / (fan_in + fan_out))) */
    CF_INIT_ZEROS,
    CF_INIT_ONES,
    CF_INIT_NORMAL,      /* normal(0, a) */
    CF_INIT_UNIFORM,     /* uniform(-a, a) */
    CF_INIT_CONST        /* every element a */
} cf_init_kind;
typedef struct cf_init { cf_init_kind kind; float a; } cf_init;
#define CF_GLOROT       ((cf_init){CF_INIT_GLOROT, 0})
#define CF_ZEROS        ((cf_init){CF_INIT_ZEROS, 0})
#define CF_ONES         ((cf_init){CF_INIT_ONES, 0})
#define CF_NORMAL(std)  ((cf_init){CF_INIT_NORMAL, (std)})
#define CF_UNIFORM(a)   ((cf_init){CF_INIT_UNIFORM, (a)})
#define CF_CONST(v)     ((cf_init){CF_INIT_CONST, (v)})

/* Scopes name what is built between begin and end. `frame` is what error traces call
 * it ("in Affine at model.c:12", the line of cf_scope_begin); `path` is prepended to
 * the names of parameters made inside ("1" turns "W" into "1.W"). Either may be NULL.
 * Scopes nest. */
#define cf_scope_begin(m, frame, path) cf_scope_begin_at(m, frame, path, __FILE__, __LINE__, 0)
CF_API void cf_scope_begin_at(cf_model *m, const char *frame, const char *path,
                              const char *file, int line, int col);
CF_API void cf_scope_end(cf_model *m);

/* A model input of per-sample shape s: the bound value is (B, s...). Inputs are
 * numbered in the order they are made. */
#define cf_input(m, name, s) cf_input_at(m, name, s, __FILE__, __LINE__, 0)
/* A trainable parameter of shape s (no batch dimension). Parameters are numbered in
 * the order they are made: make them in statements of their own, since C leaves the
 * order in which a call's arguments are evaluated open. */
#define cf_param(m, name, s, init) cf_param_at(m, name, s, init, __FILE__, __LINE__, 0)
/* Model state of shape s (no batch dimension), named like a parameter (scopes prefix
 * the name) and started from init, but never trained: ops such as cf_batchnorm
 * update it in training-mode forwards. */
#define cf_state(m, name, s, init) cf_state_at(m, name, s, init, __FILE__, __LINE__, 0)
/* A constant number (shape ()), broadcast where it is used. */
#define cf_scalar(m, v) cf_scalar_at(m, v, __FILE__, __LINE__, 0)

/* a (..., n, k) * b (k, m) -> (..., n, m); or a (..., n, k) * b (..., k, m) with equal
 * leading dimensions. */
#define cf_matmul(m, a, b) cf_binary_at(m, CF_OP_MATMUL, a, b, __FILE__, __LINE__, 0)
/* Elementwise with numpy broadcasting: a + b, a - b, a .* b, a ./ b. */
#define cf_add(m, a, b) cf_binary_at(m, CF_OP_ADD, a, b, __FILE__, __LINE__, 0)
#define cf_sub(m, a, b) cf_binary_at(m, CF_OP_SUB, a, b, __FILE__, __LINE__, 0)
#define cf_mul(m, a, b) cf_binary_at(m, CF_OP_MUL, a, b, __FILE__, __LINE__, 0)
#define cf_div(m, a, b) cf_binary_at(m, CF_OP_DIV, a, b, __FILE__, __LINE__, 0)
/* Elementwise functions (these and every other function of the notation, with its
 * numbers, are also cf_call(m, CF_OP_..., x, numbers...): see below). */
#define cf_neg(m, x)     cf_unary_at(m, CF_OP_NEG, x, 0, __FILE__, __LINE__, 0)
#define cf_sigmoid(m, x) cf_unary_at(m, CF_OP_SIGMOID, x, 0, __FILE__, __LINE__, 0)
#define cf_tanh(m, x)    cf_unary_at(m, CF_OP_TANH, x, 0, __FILE__, __LINE__, 0)
#define cf_relu(m, x)    cf_unary_at(m, CF_OP_RELU, x, 0, __FILE__, __LINE__, 0)
#define cf_softplus(m, x) cf_unary_at(m, CF_OP_SOFTPLUS, x, 0, __FILE__, __LINE__, 0)
/* 2-D convolution (cross-correlation, as PyTorch's conv2d), NCHW:
 * x (B, C, H, W) * w (O, C/groups, KH, KW) -> (B, O, OH, OW),
 * OH = (H + 2 pad_h - dil_h (KH - 1) - 1) / stride_h + 1 (OW likewise); no bias (add
 * one of shape (O, 1, 1)). cf_conv2d sets the same stride and zero padding on both
 * axes. Through cf_op_at(m, CF_OP_CONV2D, 2, {x, w}, ia, nia, ...) the integers are
 * stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups; missing or 0 means 1 (0
 * padding for the pads). */
#define cf_conv2d(m, x, w, stride, pad)                                                                  \
    cf_op_at(m, CF_OP_CONV2D, 2, (cf_node *const[]){x, w}, (const int[]){stride, stride, pad, pad}, 4, NULL, 0, \
             __FILE__, __LINE__, 0)
/* Pooling over x (B, C, H, W), a k x k window moved by stride (0: k), no padding:
 * (B, C, (H - k) / stride + 1, (W - k) / stride + 1), the maximum or the mean of each
 * window. Through cf_op_at, the integers are kernel_h, kernel_w, stride_h, stride_w,
 * pad_h, pad_w (padding at most half the kernel; maxpool never picks it, avgpool
 * counts it as zeros in the mean, as PyTorch's defaults do). cf_globalavgpool: the
 * mean over H and W, (B, C, H, W) -> (B, C). cf_dropout: in training, each element
 * is zeroed with probability p (0 <= p < 1) and the rest scaled by 1 / (1 - p), by a
 * mask drawn anew at each forward from the model's seed and the step; in evaluation,
 * y = x. */
#define cf_maxpool(m, x, k, stride) cf_op_at(m, CF_OP_MAXPOOL, 1, (cf_node *const[]){(x)}, \
    (const int[]){(k), (k), (stride), (stride)}, 4, 0, 0, __FILE__, __LINE__, 0)
#define cf_avgpool(m, x, k, stride) cf_op_at(m, CF_OP_AVGPOOL, 1, (cf_node *const[]){(x)}, \
    (const int[]){(k), (k), (stride), (stride)}, 4, 0, 0, __FILE__, __LINE__, 0)
#define cf_globalavgpool(m, x) cf_op_at(m, CF_OP_GLOBALAVGPOOL, 1, (cf_node *const[]){(x)}, 0, 0, 0, 0, \
    __FILE__, __LINE__, 0)
#define cf_dropout(m, x, p) cf_op_at(m, CF_OP_DROPOUT, 1, (cf_node *const[]){(x)}, 0, 0, (const float[]){(p)}, 1, \
    __FILE__, __LINE__, 0)
/* Batch normalisation of x (B, C, ...) per channel (dimension 1): y = (x - mean)
 * / sqrt(var + eps) * gamma + beta, with gamma and beta parameters of C numbers.
 * In training, mean and var are the batch's (over B and the dimensions after C;
 * var biased) and the running statistics, states of C numbers made with cf_state
 * (mean from zeros, var from ones), move towards them: r = (1 - momentum) r +
 * momentum s, with the variance unbiased (n / (n - 1)), as PyTorch's BatchNorm does.
 * In evaluation, the running statistics normalise. Through cf_op_at, the numbers are
 * eps (0: 1e-5) and momentum (0: 0.1). */
#define cf_batchnorm(m, x, gamma, beta, run_mean, run_var) cf_op_at(m, CF_OP_BATCHNORM, 5, \
    (cf_node *const[]){(x), (gamma), (beta), (run_mean), (run_var)}, 0, 0, 0, 0, __FILE__, __LINE__, 0)
/* Layer normalisation over the last dimension of x (B, ..., d), as PyTorch's
 * nn.LayerNorm(d): y = (x - mean) / sqrt(var + eps) * gamma + beta, mean and var (biased)
 * those of each row of d numbers; gamma and beta hold d numbers each (parameters, from
 * ones and zeros). eps 0 means 1e-5. */
#define cf_layernorm(m, x, gamma, beta, eps) cf_op_at(m, CF_OP_LAYERNORM, 3, \
    (cf_node *const[]){(x), (gamma), (beta)}, 0, 0, (const float[]){(eps)}, 1, __FILE__, __LINE__, 0)
/* GELU, as PyTorch's: cf_gelu is x Φ(x) in the tanh approximation (approximate='tanh'),
 * 0.5 x (1 + tanh(sqrt(2/π) (x + 0.044715 x^3))); cf_gelu_exact is x Φ(x) itself, Φ the
 * standard normal distribution function (PyTorch's default). */
#define cf_gelu(m, x)       cf_unary_at(m, CF_OP_GELU, x, 0, __FILE__, __LINE__, 0)
#define cf_gelu_exact(m, x) cf_unary_at(m, CF_OP_GELU, x, 1, __FILE__, __LINE__, 0)
/* x with dimensions i and j swapped, counted over the whole shape: for x (B, T, H, d),
 * cf_transpose(m, x, 1, 2) is (B, H, T, d). The batch dimension (0) cannot move;
 * negative numbers count from the end (-1 the last). */
#define cf_transpose(m, x, i, j) cf_op_at(m, CF_OP_TRANSPOSE, 1, (cf_node *const[]){(x)}, \
    (const int[]){(i), (j)}, 2, 0, 0, __FILE__, __LINE__, 0)
/* Rows of a table by index, as PyTorch's nn.Embedding: x (B, ...) holds class indices
 * stored as floats, E (V, D) is a parameter; y (B, ..., D), y[..., :] = E[x[...], :].
 * An index that is not a whole number in 0..V-1 makes cf_forward fail, naming it, its
 * place in x and V. No gradient reaches x; E's is a scatter-add of dy's rows, the same
 * bits at any thread count. cf_model_input_classes tells which inputs hold indices. */
#define cf_embedding(m, x, E) cf_binary_at(m, CF_OP_EMBEDDING, x, E, __FILE__, __LINE__, 0)
/* A whole LSTM layer over sequences, as one node (what the notation's LSTM computes at
 * every step of an unroll, which the compiler puts in its place): through cf_op_at,
 * inputs h0, c0 (B, H) where the steps start (carried states, cf_carry_at: they take
 * no gradient), W (I, 4H), U (H, 4H), b (1, 4H), gates side by side in PyTorch's
 * order i, f, g, o, then the sequences x (B, T, I), or a table E (V, I) and indices x
 * (B, T) whose rows of E are the sequences (an embedding folded in). y (B, T, 2H):
 * at each step h, then c. z = x_t W + h_{t-1} U + b; i, f, o = σ, g = tanh of their
 * parts; c_t = f c_{t-1} + i g; h_t = o tanh(c_t). */
#define cf_leakyrelu(m, x, a) cf_call(m, CF_OP_LEAKYRELU, x, a)
#define cf_exp(m, x)     cf_unary_at(m, CF_OP_EXP, x, 0, __FILE__, __LINE__, 0)
#define cf_log(m, x)     cf_unary_at(m, CF_OP_LOG, x, 0, __FILE__, __LINE__, 0)
/* Over the last dimension. cf_softmax_causal takes x (..., T, T), attention scores,
 * and normalises row i of each T x T matrix over columns 0..i alone, the rest 0: each
 * position attends to itself and those before it, never ahead. */
#define cf_softmax(m, x)    cf_unary_at(m, CF_OP_SOFTMAX, x, 0, __FILE__, __LINE__, 0)
#define cf_softmax_causal(m, x) cf_unary_at(m, CF_OP_SOFTMAX, x, 1, __FILE__, __LINE__, 0)
#define cf_logsoftmax(m, x) cf_unary_at(m, CF_OP_LOGSOFTMAX, x, 0, __FILE__, __LINE__, 0)
/* (..., n) -> (...): the sum or mean of the last dimension. On a (B) value this
 * reduces over the batch and gives (). */
#define cf_sum(m, x)  cf_unary_at(m, CF_OP_SUM, x, 0, __FILE__, __LINE__, 0)
#define cf_mean(m, x) cf_unary_at(m, CF_OP_MEAN, x, 0, __FILE__, __LINE__, 0)
/* (B, ...) -> (B, n), n the product of the rest. */
#define cf_flatten(m, x) cf_unary_at(m, CF_OP_FLATTEN, x, 0, __FILE__, __LINE__, 0)
/* New per-sample shape with the same element count; one dimension may be -1. A value
 * without a batch dimension is reshaped whole. */
#define cf_reshape(m, x, s) cf_reshape_at(m, x, s, __FILE__, __LINE__, 0)
/* Join n values along dim (0 is the batch dimension where there is one; negative
 * counts from the end); the other dimensions must be equal. */
#define cf_concat(m, dim, n, xs) cf_concat_at(m, dim, n, xs, __FILE__, __LINE__, 0)
/* Elements [start, start + len) of dim. */
#define cf_slice(m, x, dim, start, len) cf_slice_at(m, x, dim, start, len, __FILE__, __LINE__, 0)

/* Losses, each a number () averaged over the batch.
 * cf_softmax_xent: p = softmax(logits) over the last dimension, loss = mean of
 * -log p[label]. labels are (B) class indices (stored as floats) or (B, C) target
 * probabilities. Returns the loss node; its input 0 is the softmax node, whose value is
 * the probabilities. Backward is fused: d logits = (p - onehot) / B.
 * cf_cross_entropy: the same loss on probabilities p that the model already made
 * (fused with the softmax when p comes straight from one). Through cf_op_at
 * (CF_OP_XENT, {p, labels}), the one number is the label smoothing ε: in training
 * (cf_forward(e, 1)) the targets are (1 - ε) onehot + ε / C, as PyTorch's
 * CrossEntropyLoss(label_smoothing = ε); in evaluation it is left out.
 * cf_mse: mean of (pred - target)^2 over all elements. */
#define cf_softmax_xent(m, logits, labels) cf_binary_at(m, CF_OP_XENT, cf_softmax(m, logits), labels, __FILE__, __LINE__, 0)
#define cf_cross_entropy(m, p, labels) cf_binary_at(m, CF_OP_XENT, p, labels, __FILE__, __LINE__, 0)
#define cf_mse(m, pred, target) cf_binary_at(m, CF_OP_MSE, pred, target, __FILE__, __LINE__, 0)

/* Mark a node as a model output; returns its output index or -1. A scalar output (a
 * loss) gets a head gradient of 1 at bind; other head gradients start at 0. */
CF_API int cf_output(cf_model *m, cf_node *n);

/* Reading a graph. */
CF_API int      cf_node_input_count(const cf_node *n);
CF_API cf_node *cf_node_input(const cf_node *n, int i);
CF_API const char *cf_node_op_name(const cf_node *n);
CF_API cf_shape cf_node_shape(const cf_node *n);  /* known after a bind; CF_BATCH marks B */

/* The operations (append-only: part of the API). */
typedef enum cf_opcode {
    CF_OP_INPUT, CF_OP_PARAM, CF_OP_CONST,
    CF_OP_MATMUL, CF_OP_ADD, CF_OP_SUB, CF_OP_MUL, CF_OP_DIV,
    CF_OP_NEG, CF_OP_SIGMOID, CF_OP_TANH, CF_OP_RELU, CF_OP_LEAKYRELU, CF_OP_EXP, CF_OP_LOG,
    CF_OP_SOFTMAX, CF_OP_LOGSOFTMAX, CF_OP_SUM, CF_OP_MEAN,
    CF_OP_RESHAPE, CF_OP_FLATTEN, CF_OP_CONCAT, CF_OP_SLICE,
    CF_OP_XENT, CF_OP_MSE,
    CF_OP_SOFTPLUS,
    CF_OP_CONV2D,
    CF_OP_MAXPOOL, CF_OP_AVGPOOL, CF_OP_GLOBALAVGPOOL, CF_OP_DROPOUT,
    CF_OP_STATE, CF_OP_BATCHNORM,
    CF_OP_EMBEDDING,
    CF_OP_LSTM,
    CF_OP_LAYERNORM, CF_OP_GELU,
    CF_OP_TRANSPOSE,
    CF_OP_AFFINE,      /* x W + b in one product: what the fusion pass makes of the two ops */
    CF_OP_AFFINE_RELU, /* relu(x W + b) in one product, likewise */
    CF_OP_CLAMP,
    CF_OP_BATCHNORM_RELU, /* relu(batchnorm(...)) in one node: what a fusion pass makes of the two */
    CF_OP_BATCHNORM_ADD_RELU, /* relu(batchnorm(x) + r) in one node (a residual block's end), likewise */
    CF_OP_QAFFINE,     /* x W + b (relu) as an 8-bit product: what inference binds of a quantized model run */
    CF_OP_QCONV2D,     /* conv2d (+ b, batch norm, relu) as an 8-bit product, likewise */
    CF_OP_QCHAIN,      /* 8-bit products in a row, each reading the one before, likewise */
    CF_OP_ATTENTION,   /* softmax(q k^T) v, tiled, the scores never held: what a fusion pass makes of attention */
    CF_OP_CACHE_WRITE, /* a cache of keys or values with new rows written in: what cf_model_load_cached adds */
    CF_OP_ROWS_AT,     /* the rows of a table of positions at the positions reached: likewise */
    CF_OP_COUNT_
} cf_opcode;

CF_API cf_node *cf_input_at(cf_model *m, const char *name, cf_shape s, const char *file, int line, int col);
CF_API cf_node *cf_param_at(cf_model *m, const char *name, cf_shape s, cf_init init, const char *file, int line, int col);
CF_API cf_node *cf_state_at(cf_model *m, const char *name, cf_shape s, cf_init init,
                            const char *file, int line, int col);
CF_API cf_node *cf_scalar_at(cf_model *m, float v, const char *file, int line, int col);
CF_API cf_node *cf_unary_at(cf_model *m, cf_opcode op, cf_node *x, float a, const char *file, int line, int col);
/* Any op by its code, with its inputs and attributes (integers ia, numbers fa, as
 * the op's file documents them): what the helpers above and the ops' own calls
 * (cf_conv2d, ...) are made of. NULL with the error for a wrong input count. */
CF_API cf_node *cf_op_at(cf_model *m, cf_opcode op, int nin, cf_node *const *in, const int *ia, int nia,
                         const float *fa, int nfa, const char *file, int line, int col);
/* Any function of one value that the notation calls by name (relu, leakyrelu,
 * clamp, ...: every op with CF_CALL in its row), with the numbers it takes after the
 * value, in the notation's order: cf_call(m, CF_OP_CLAMP, x, 0, 6) makes what
 * clamp(x, 0, 6) makes; numbers left out take their defaults. An op added to cflux
 * needs no macro of its own. NULL with the error for a number too many, a required
 * one missing, or a fraction where a whole number belongs. */
#define cf_call(m, op, ...) cf_call_at(m, op, CF_FIRST_(__VA_ARGS__, 0), (const double[]){CF_REST_(__VA_ARGS__, 0)}, \
    (int)(sizeof((const double[]){CF_REST_(__VA_ARGS__, 0)}) / sizeof(double)) - 1, __FILE__, __LINE__, 0)
#define CF_FIRST_(x, ...) (x)
#define CF_REST_(x, ...) __VA_ARGS__   /* the numbers and a 0 ending them, so that none may follow x */
CF_API cf_node *cf_call_at(cf_model *m, cf_opcode op, cf_node *x, const double *num, int nnum, const char *file,
                           int line, int col);
CF_API cf_node *cf_binary_at(cf_model *m, cf_opcode op, cf_node *a, cf_node *b, const char *file, int line, int col);
CF_API cf_node *cf_reshape_at(cf_model *m, cf_node *x, cf_shape s, const char *file, int line, int col);
CF_API cf_node *cf_concat_at(cf_model *m, int dim, int n, cf_node *const *xs, const char *file, int line, int col);
CF_API cf_node *cf_slice_at(cf_model *m, cf_node *x, int dim, int start, int len, const char *file, int line, int col);

/* ---- Executors ----------------------------------------------------------------------
 *
 * cf_bind infers every shape for this batch size (an error names the op, the shapes
 * and where the node was built), plans memory by liveness and allocates all buffers:
 * after it, forward, backward and update allocate nothing. */

#define CF_TRAIN       1u  /* keep what backward needs; gradient buffers */
#define CF_INPUT_GRADS 2u  /* also compute gradients of the inputs (implies CF_TRAIN) */

CF_API cf_exec *cf_bind(cf_model *m, int batch, unsigned flags);
CF_API void     cf_exec_free(cf_exec *e);

CF_API int cf_exec_batch(const cf_exec *e);
CF_API int cf_exec_input_count(const cf_exec *e);
CF_API int cf_exec_output_count(const cf_exec *e);

/* Buffers, valid until cf_exec_free; count (may be NULL) receives the element count.
 * NULL for an index out of range (or for grads of an executor without them). */
CF_API float       *cf_exec_input(cf_exec *e, int i, size_t *count);       /* write inputs */
CF_API const float *cf_exec_output(cf_exec *e, int i, size_t *count);
CF_API float       *cf_exec_output_grad(cf_exec *e, int i, size_t *count); /* head grads */
CF_API const float *cf_exec_input_grad(cf_exec *e, int i, size_t *count);
CF_API cf_shape     cf_exec_input_shape(const cf_exec *e, int i);   /* with the batch */
CF_API cf_shape     cf_exec_output_shape(const cf_exec *e, int i);
CF_API int          cf_exec_input_index(const cf_exec *e, const char *name); /* -1 if none */

/* Read input i from your memory instead of copying into cf_exec_input's buffer: later
 * forwards and backwards read data in place, until cf_exec_set_input(e, i, NULL) goes
 * back to the executor's own buffer. data holds the input's count floats (as
 * cf_exec_input reports it) and must stay valid while the executor may run; cflux
 * never writes to it. While it is set, cf_exec_input returns data. 0, or -1 for an
 * index out of range. */
CF_API int          cf_exec_set_input(cf_exec *e, int i, const float *data);

/* Bytes of activation memory the plan uses, and what it would use without reuse. */
CF_API size_t cf_exec_arena_bytes(const cf_exec *e, size_t *unplanned);

/* Run the graph; train != 0 selects training behaviour: dropout drops, batch
 * normalisation uses and updates batch statistics. 0 or -1 (a label out of range, a
 * NaN with CFLUX_NANTRAP set, ...). */
CF_API int cf_forward(cf_exec *e, int train);
/* The step number of the next forward, which with the model's seed picks its random
 * numbers (dropout's masks). Forwards count it up from 1 after the bind; a training
 * loop that resumes a run, or that moves between executors (a short last batch),
 * sets it so that the masks follow the run, not the executor. cf_fit does. */
CF_API void cf_exec_set_step(cf_exec *e, long step);
/* Recurrent state that an unrolled model carries from one forward to the next
 * (unroll(m, n, stateful = true) in the notation: the final step's state starts the
 * next call; gradients stop at the carry, as in truncated back-propagation through
 * time) goes back to its start (zeros, unless the state says otherwise). Each
 * executor carries its own, from its bind. */
CF_API void cf_exec_reset_state(cf_exec *e);
/* The carried states of an executor, by the names of the model's states ("1.h"): each
 * (batch, d...) as its shape says. get copies out the values the next forward starts
 * from; set replaces them (call it between a backward and the next forward, as
 * resuming a run does). 0, or -1 for an index out of range. */
CF_API int         cf_exec_state_count(const cf_exec *e);
CF_API const char *cf_exec_state_name(const cf_exec *e, int i);
CF_API cf_shape    cf_exec_state_shape(const cf_exec *e, int i);
CF_API int         cf_exec_state_get(const cf_exec *e, int i, float *out);
CF_API int         cf_exec_state_set(cf_exec *e, int i, const float *in);
/* Every carried state of `from` into `to` (executors of models with the same states by
 * name and size, such as the forms of a cached model: cf_model_load_cached_n), as get
 * then set of each would. 0, or -1 (nothing copied) when they differ. */
CF_API int         cf_exec_state_copy(const cf_exec *from, cf_exec *to);
/* Back-propagate the head gradients of the last forward; parameter gradients
 * accumulate or are overwritten as their grad_req says. Needs CF_TRAIN. 0 or -1. */
CF_API int cf_backward(cf_exec *e);
/* During cf_backward, fn(param, user) is called for each parameter as soon as its
 * gradient is final (nothing later in backward adds to it), in the order backward
 * finishes them, every parameter once per call: what data-parallel training needs to
 * start summing gradients while backward goes on. fn NULL: none. 0 or -1. */
CF_API int cf_exec_on_grad_ready(cf_exec *e, void (*fn)(int param, void *user), void *user);
/* A second stream of random numbers (dropout's masks) beside the model's seed and the
 * step: each process of a data-parallel run draws its own (0, the default, is what a
 * single process draws). */
CF_API void cf_exec_set_stream(cf_exec *e, uint64_t stream);
/* p -= lr * grad, then grad = 0, for every parameter with a gradient. 0 or -1. */
CF_API int cf_update_sgd(cf_exec *e, float lr);

/* ---- Data ---------------------------------------------------------------------------
 *
 * A dataset holds n samples: inputs x (each of a per-sample shape, float) and targets
 * y (target_size floats each; for classification one class index), in memory, or, for
 * an image folder, its targets in memory and its inputs decoded from the files as
 * they are needed (cf_dataset_streamed). */

typedef struct cf_dataset cf_dataset;

/* From arrays, copied: x is n samples of shape xs, y is n * ysize targets. */
CF_API cf_dataset *cf_dataset_from_arrays(const float *x, cf_shape xs, const float *y, int ysize, size_t n);
/* The same without copying: the dataset reads x and y where they are (never writing
 * them), so they must stay valid and unchanged until cf_dataset_free. name is what
 * its messages call it (NULL: "arrays"). */
CF_API cf_dataset *cf_dataset_view_arrays(const float *x, cf_shape xs, const float *y, int ysize, size_t n,
                                          const char *name);
/* IDX files (the MNIST format), plain or gzip'd: images (n, h, w) of bytes, scaled to
 * [0, 1], and labels (n) of bytes. The dataset is named after the images file
 * (cf_dataset_target_name gives the labels file). */
CF_API cf_dataset *cf_dataset_load_idx(const char *images, const char *labels);
/* CSV, one sample per row. label_col: the column of the target (0-based; negative
 * counts from the end); the features are all the other columns, and must be numbers
 * (a word is an error naming the line, the column and the word: nothing is one-hot
 * encoded). The label column holds numbers (class indices or targets) or words, not
 * both: words are class names, the classes the distinct words sorted as strcmp sorts
 * them (at most 65,536, each at most 100 bytes, one pair of double quotes taken off),
 * the targets their indices (cf_dataset_class_names). A missing value (an empty
 * field, "?", or NA, N/A, NaN, null in any case) is an error naming the line and the
 * column. header: 1 the first row is a header, 0 it is not, -1 decide: it is one when
 * some column holds a field that is not a number (nor a missing value) there and a
 * number in the second row; in a file of one row, when a field is not a number. (So
 * a label column of words does not make a first row of data a header, and a header
 * of numbers only is read as data.) The file is parsed as it is read: memory is the
 * numbers (counted against the memory limit, so a file too large is refused as soon
 * as it passes it) plus a line; a line longer than 64 MiB is refused. Columns by
 * name, a choice of features, and the classes of a trained model: cf_data_open_opts. */
CF_API cf_dataset *cf_dataset_load_csv(const char *path, int label_col, int header);
/* Inputs alone, for prediction: an IDX file of bytes (images, scaled to [0, 1]) or a
 * CSV file of numbers (every column a feature; header detected). Targets are 0. */
CF_API cf_dataset *cf_dataset_load_inputs(const char *path);
/* The byte that ends each file's text in a corpus of several files (text:FOLDER,
 * text:A,B): ASCII's record separator, a class of the vocabulary like any other. */
#define CF_TEXT_FILE_END 0x1e
/* Text for character-level models: the file's bytes (plain or gzip'd). The
 * vocabulary is its distinct bytes, ascending; a byte's class index is its position
 * there. Samples are consecutive, non-overlapping pieces of seq_len (T) characters as
 * indices, sample shape (T); the targets, T per sample, are the same characters
 * shifted by one: sample j of a part starting at byte a has x = chars [a + jT,
 * a + jT + T) and y = chars [a + jT + 1, a + jT + T + 1). The last held_out share of
 * the file (0 <= held_out < 1; floor of it, in bytes) becomes *test, unless it is
 * shorter than T + 1 characters (then *test is NULL and all of it trains). Both
 * datasets are sequential and share the vocabulary. 0, or -1 with the error (a
 * missing or empty file, a text shorter than T + 1 characters).
 * A corpus of several files is read as one text, each file's bytes followed by
 * CF_TEXT_FILE_END: path a folder (its regular files under it, at any depth, through
 * symbolic links, sorted by path byte by byte; names that start with '.' passed
 * over, and so are a file that links reached already, by an earlier path, and a file
 * that holds a NUL byte, which is not text; a loop of links, an empty folder or one
 * with no file of text are errors), or, when no file or folder of the whole name
 * exists, files and folders separated by commas (in the order given; a folder's
 * files sorted). Any file that cannot be read is an error naming it. A corpus's test
 * set is the last held_out share of each file (its end marker with it; floor, in
 * bytes), the files' tails one after another, and its training text their heads one
 * after another; unless the tails come to fewer than T + 1 characters (then all of
 * it trains). A path that names a file reads it alone, with no end marked. */
CF_API int cf_dataset_load_text(const char *path, int seq_len, double held_out, cf_dataset **train,
                                cf_dataset **test);
/* A data spec, as the tool takes it:
 *   fashion-mnist        Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist,
 *                        or the directory $CFLUX_DATA)
 *   idx:TRAIN_IMAGES,TRAIN_LABELS[,TEST_IMAGES,TEST_LABELS]
 *   csv:TRAIN[,TEST]     cf_dataset_load_csv (label in column csv_label_col, header
 *                        detected); word labels of TEST are TRAIN's classes
 *   text:PATH            (all after "text:": a file, a folder, or files and folders
 *                        separated by commas, as cf_dataset_load_text reads them) with
 *                        sequences of seq_len, the last 10% of the text (of each
 *                        file of a corpus) the test set
 *   images:DIR[,TESTDIR] a folder of class folders (cf_data_open_opts with o.image, the
 *                        model's input shape): class i is the i-th subfolder's name in
 *                        strcmp order (or, given o.class_names, the folder of that name;
 *                        another name is an error), kept as the dataset's class names;
 *                        its images are the .png, .jpg and .jpeg files (any case) in it
 *                        and its subfolders, sorted; hidden files and others are passed
 *                        over and counted (cf_dataset_skipped). Links are followed, but
 *                        a folder reached twice (a loop) is an error. TESTDIR's classes
 *                        must be among DIR's. Images are converted and resized as
 *                        cf_dataset_load_images says (o.exact_size: another size is an
 *                        error). The dataset is streamed: see cf_dataset_streamed. Each
 *                        file's header is read when it is opened (o.skip_bad: each file
 *                        decoded), so a file that is not an image is an error naming it
 *                        before training (o.skip_bad: skipped and counted)
 * *test is set to NULL when the spec has none. 0 or -1. cf_data_open is
 * cf_data_open_ex with seq_len 0, which text: refuses: a sequence length comes from
 * the model (its input 0 of shape (T)). */
CF_API int cf_data_open(const char *spec, int csv_label_col, cf_dataset **train, cf_dataset **test);
CF_API int cf_data_open_ex(const char *spec, int csv_label_col, int seq_len, cf_dataset **train,
                           cf_dataset **test);
/* How to read a data spec (cf_data_open_opts): what cf_data_open's arguments say, and
 * more. cf_data_defaults() gives label_col 0 and everything else off.
 *
 * CSV columns are named by a number (0-based, negative from the end; a number is
 * always a position, even where a header name is that number) or by a header name,
 * found in the file's header (a name not there is an error listing the columns and
 * suggesting the nearest; a name for a file without a header is an error). features
 * takes only those columns as the inputs, in the order given (a column given twice,
 * or the label among them, is an error); a column neither label nor feature is not
 * read. With class_names, word labels are read as those classes' indices (a file may
 * hold some of them, in any order), and the test file's words as the training
 * file's classes when they are not given. */
typedef struct cf_data_opts {
    int label_col;          /* CSV: the label column, 0-based, negative from the end (when label is NULL) */
    const char *label;      /* CSV: the label column by header name or number ("price", "3", "-1"); NULL: label_col */
    const char *features;   /* CSV: the feature columns, names or numbers separated by commas, in the order
                               the inputs take them; NULL: all but the label */
    int seq_len;            /* text: the sequence length T (the model's input (T)); 0: text is refused */
    cf_shape image;         /* images: the per-sample shape to decode to (a model's input shape; CF_BATCH dropped) */
    int exact_size;         /* images: an image of another size is an error naming it (else it is resized) */
    int skip_bad;           /* images: a file that cannot be read is skipped and counted, not an error */
    int stream_only;        /* images: never keep decoded images (see cf_dataset_streamed): every pass
                               decodes every file, and memory is the queue alone */
    const char *const *class_names;   /* the classes known already (a trained model's): word labels and */
    int nclass_names;                 /* image folders map to these indices, and a class not among them is an error */
    const char *classes_of;           /* whose classes those are, for that error (a file's name); NULL: "the model" */
} cf_data_opts;
CF_API cf_data_opts cf_data_defaults(void);
CF_API int cf_data_open_opts(const char *spec, const cf_data_opts *o, cf_dataset **train, cf_dataset **test);
CF_API void cf_dataset_free(cf_dataset *d);

CF_API size_t       cf_dataset_count(const cf_dataset *d);
CF_API cf_shape     cf_dataset_sample_shape(const cf_dataset *d);
CF_API int          cf_dataset_target_size(const cf_dataset *d);
/* Labels are class indices 0 .. classes-1 (all targets whole numbers >= 0, one per
 * sample); 0 for anything else (regression targets). */
CF_API int          cf_dataset_classes(const cf_dataset *d);
/* n * sample count floats; NULL for a streamed dataset (cf_dataset_streamed), whose
 * samples cf_dataset_read decodes. */
CF_API const float *cf_dataset_x(const cf_dataset *d);
CF_API const float *cf_dataset_y(const cf_dataset *d);   /* n * target_size floats */
/* A streamed dataset (an image folder, images:DIR) keeps its file list and its
 * targets in memory, not its inputs: cf_fit, cf_evaluate and cf_predict decode each
 * sample when they need it, a background thread reading ahead in the order they will
 * ask (an epoch's shuffle is known before it starts) into a queue of at most 4 batches
 * (fewer when those would pass 64 MiB). Images decoded once are kept, a byte a pixel,
 * when each of their values is an 8-bit image's (b / 255: an image at the model's size,
 * grey for a grey model) and the whole folder's pixels fit in a quarter of the memory
 * left under the limit (cf_set_memory_limit) when it is first read, and in 1 GiB: such a
 * folder is decoded in its first epoch only (o.stream_only: never). Results are bit for
 * bit those of the same samples in memory, at any cf_set_threads. A file that cannot
 * be read then stops training with its error. Splits divide the file list. 1 or 0. */
CF_API int          cf_dataset_streamed(const cf_dataset *d);
/* Samples [first, first + count) of any dataset into out (count * sample count
 * floats): copied, or decoded from a streamed dataset's files. 0 or -1. */
CF_API int          cf_dataset_read(const cf_dataset *d, size_t first, size_t count, float *out);
/* An image folder's files left out: the count of images that could not be read and
 * were skipped (o.skip_bad), with the first one's message in *first_bad ("FILE:
 * why", or NULL); *ignored: the files that are not images (hidden, or of other
 * names). 0 and NULL for other data. */
CF_API size_t       cf_dataset_skipped(const cf_dataset *d, size_t *ignored, const char **first_bad);
/* Where the inputs came from, for messages: the CSV file, the IDX images file,
 * the image folder, "arrays". */
CF_API const char  *cf_dataset_name(const cf_dataset *d);
/* Where the targets came from, for messages about labels: the IDX labels file, else
 * the same as cf_dataset_name. */
CF_API const char  *cf_dataset_target_name(const cf_dataset *d);

/* The columns of a CSV dataset (0-based, counting the label column; kept by splits):
 * how many the file has (0 when the dataset is not from a CSV file), which one holds
 * the label (-1 when not from a CSV file with labels), and a column's name from the
 * header row (trimmed, one pair of double quotes taken off, control characters as '?',
 * cut to 63 bytes; NULL when the file has no header, or col is out of range). */
CF_API int          cf_dataset_column_count(const cf_dataset *d);
CF_API int          cf_dataset_label_column(const cf_dataset *d);
CF_API const char  *cf_dataset_column_name(const cf_dataset *d, int col);

/* What part of what a dataset is, in a phrase for people, or NULL: text's held-out
 * end says how much of the text it is ("the last 10% of each file, 5012 characters
 * in all"), a corpus's training part how many files it read and passed over. Valid
 * as long as d. */
CF_API const char  *cf_dataset_about(const cf_dataset *d);
/* Sequential data (text): sample j + 1 continues where sample j ends, so cf_fit keeps
 * the order, as streams (see cf_fit). 1 or 0. Splits keep it. */
CF_API int          cf_dataset_sequential(const cf_dataset *d);
/* A text dataset's vocabulary: *n distinct bytes, ascending; class index i is byte
 * vocab[i]. NULL and *n = 0 for other data. Valid as long as d. */
CF_API const unsigned char *cf_dataset_vocab(const cf_dataset *d, int *n);
/* The names of the classes when the data names them (a CSV label column of words, an
 * image folder's subfolders): class index i is names[i], sorted as strcmp sorts
 * them. The count, 0 when the data has none. Valid as long as d; splits keep them. */
CF_API int cf_dataset_class_names(const cf_dataset *d, const char *const **names);

/* A summary of the targets, for checks before training (a label column that holds one
 * class, or that looks like a feature). Over all n * target_size targets: distinct
 * values are counted exactly up to CF_TARGET_DISTINCT_MAX; past that, more is 1 and
 * distinct stays at the maximum (-0 counts as 0, all NaNs as one value). whole: every
 * target is a finite whole number. min, max: over the targets that are not NaN (NAN
 * when none is). 0, or -1 with the error (NULL arguments). */
#define CF_TARGET_DISTINCT_MAX 65536
typedef struct cf_target_stats {
    size_t count;       /* targets looked at */
    size_t distinct;    /* distinct values, at most CF_TARGET_DISTINCT_MAX */
    int more;           /* 1: there are more distinct values than that */
    int whole;          /* 1: all are whole numbers */
    double min, max;
} cf_target_stats;
CF_API int cf_dataset_target_stats(const cf_dataset *d, cf_target_stats *s);
/* The samples of d whose class label is one of classes[0 .. n), in their order,
 * relabelled by the place of their class in the list (classes[i] becomes i), with
 * the class names following (name i is d's name of classes[i]): for training on some
 * of the classes. NULL with the error: d's targets are not class labels, a class out
 * of range or given twice, no sample left. */
CF_API cf_dataset *cf_dataset_keep_classes(const cf_dataset *d, const int *classes, int n);
/* Split off a validation set: round(fraction * n) samples, chosen by the seed (for
 * sequential data, the last ones). */
CF_API int cf_dataset_split(const cf_dataset *d, double fraction, uint64_t seed, cf_dataset **train,
                            cf_dataset **val);

/* ---- Optimizers --------------------------------------------------------------------
 *
 * An optimizer updates a model's parameters from their accumulated gradients, then
 * zeroes the gradients. Its state (momentum buffers, Adam's moments) is kept per
 * parameter and named after it, so checkpoints can hold it. The updates are PyTorch's:
 *   sgd       p -= lr g
 *   momentum  b = mu b + g;            p -= lr b
 *   nesterov  b = mu b + g;            p -= lr (g + mu b)
 *   adam      m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
 *             p -= lr (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps)
 *   adamw     p -= lr wd p, then adam
 * weight_decay adds wd p to g first (all but adamw, where it is decoupled as above);
 * clip_norm > 0 first scales all gradients together so that their global L2 norm is
 * at most clip_norm. Parameters with CF_GRAD_NONE are left alone. */

typedef struct cf_optim cf_optim;

typedef struct cf_optim_opts {
    const char *name;      /* "sgd", "momentum", "nesterov", "adam", "adamw" */
    float lr;              /* the base learning rate */
    float momentum;        /* momentum, nesterov */
    float beta1, beta2, eps;
    float weight_decay;
    float clip_norm;       /* 0: no clipping */
} cf_optim_opts;

/* Defaults for an optimizer name: lr 0.1 (sgd, momentum, nesterov) or 0.001 (adam,
 * adamw), momentum 0.9, betas 0.9 and 0.999, eps 1e-8, weight decay 0 (adamw: 0.01),
 * no clipping. An unknown name gives name NULL. */
CF_API cf_optim_opts cf_optim_defaults(const char *name);

/* For a model whose parameters exist (after cf_model_init_params or a bind). NULL and
 * the error for an unknown name or a value out of range. */
CF_API cf_optim *cf_optim_new(cf_model *m, const cf_optim_opts *opts);
CF_API void      cf_optim_free(cf_optim *o);

/* One update at learning rate lr (the schedule's value for this step), then the
 * gradients are zeroed. Returns 0, or -1 when a gradient is not finite (nothing is
 * changed then). Allocates nothing. */
CF_API int cf_optim_step(cf_optim *o, float lr);

/* The state, as named tensors ("momentum.1.W", "adam.m.1.W", "adam.v.1.W", ...) and
 * the step count t, for checkpoints; writing the buffers restores it. */
CF_API int         cf_optim_state_count(const cf_optim *o);
CF_API const char *cf_optim_state_name(const cf_optim *o, int i);
CF_API float      *cf_optim_state_data(cf_optim *o, int i, size_t *count);
CF_API long        cf_optim_get_steps(const cf_optim *o);
CF_API void        cf_optim_set_steps(cf_optim *o, long t);

/* The learning rate of a schedule at a step (0-based) of a run of total_steps, with
 * steps_per_epoch steps an epoch:
 *   "const"          base
 *   "step:E:G"       base * G^(floor(epoch / E)), E whole epochs, e.g. "step:5:0.1"
 *   "cosine"         base * (1 + cos(pi * step / total_steps)) / 2
 * and any of them followed by "+warmup:N": linear from base/N up to the schedule's
 * value over the first N steps ("warmup:N" alone means "const+warmup:N").
 * 0, or -1 with the error for a spec it does not understand. */
CF_API int cf_schedule_lr(const char *spec, float base, long step, long total_steps, long steps_per_epoch,
                          float *lr);

/* ---- Training ----------------------------------------------------------------------
 *
 * A classifier is a model whose output 0 is a softmax; it trains with cross-entropy
 * on class-index labels, fused with the softmax (d logits = p - onehot, as MXNet's
 * SoftmaxOutput). Anything else trains by mean squared error against targets of the
 * output's shape. */

typedef enum cf_loss { CF_LOSS_XENT = 1, CF_LOSS_MSE = 2 } cf_loss;

/* Add the training loss to a model (executors bound before do not see it): a new input (the last:
 * "label", class indices of the output's shape less its last dimension, for
 * CF_LOSS_XENT; "target", of the output's shape, for CF_LOSS_MSE) and the loss, a
 * number averaged over the batch, which executors bound with CF_TRAIN or CF_LOSS
 * compute and cf_exec_loss reads. The model's outputs stay as they were. 0, or -1:
 * CF_LOSS_XENT on a model whose output is not a softmax fails with "classifier models
 * must end with softmax" and the output's place in the source. */
CF_API int cf_model_add_loss(cf_model *m, cf_loss kind);
CF_API int cf_model_has_loss(const cf_model *m);   /* 0, CF_LOSS_XENT or CF_LOSS_MSE */

#define CF_LOSS 4u   /* cf_bind: compute the loss too (without gradients) */

/* The loss of the last forward (NAN if the executor does not compute one). */
CF_API float cf_exec_loss(const cf_exec *e);

/* What one epoch of cf_fit did; NAN where there was nothing to measure. */
typedef struct cf_epoch_stats {
    int epoch, epochs;                    /* 1-based */
    double train_loss, train_accuracy;    /* averaged over the epoch's batches as trained */
    double val_loss, val_accuracy;        /* on the validation split */
    double test_loss, test_accuracy;      /* on the test set */
    double lr;                            /* at the epoch's last step */
    double seconds, samples_per_sec;      /* of training (evaluation excluded) */
    /* Regression (NaN for a classifier): the mean absolute error and R² over every
     * target number of the validation split and of the test set, as cf_metrics has
     * them, in the targets' own units (a standardisation of the targets undone) */
    double val_mae, val_r2;
    double test_mae, test_r2;
} cf_epoch_stats;

typedef struct cf_fit_opts {
    int epochs;               /* 10 */
    int batch;                /* 64; the last, smaller batch of an epoch is trained too */
    cf_optim_opts optim;      /* cf_optim_defaults("sgd") */
    const char *schedule;     /* "const" (see cf_schedule_lr) */
    double val_fraction;      /* 0: no validation split */
    uint64_t seed;            /* shuffling (and, with cf_model_set_seed, everything) */
    cf_loss loss;             /* 0: from the model (see cf_trainer_new) */
    int normalize;            /* standardise the inputs, and a regression's targets (cf_model_set_input_norm,
                                 cf_model_set_target_norm) */
    /* Called after each epoch; return non-zero to stop. May be NULL. */
    int (*on_epoch)(const cf_epoch_stats *s, void *user);
    /* Called after each batch: step of steps in this epoch, running loss/accuracy. */
    void (*on_batch)(int epoch, long step, long steps, double loss, double accuracy, double samples_per_sec,
                     void *user);
    /* Called with a line to show the user: "warning: ..." or "note: ..." (a resumed
     * run whose settings changed, an epoch at learning rate 0). May be NULL. */
    void (*on_warning)(const char *message, void *user);
    void *user;
    /* Early stopping (both need val_fraction > 0): stop once the validation loss has
     * not improved on its lowest for `patience` epochs (0: never); after each epoch
     * whose validation loss is the lowest yet, write a checkpoint to keep_best (NULL:
     * none). The history says which epoch was best (cf_early_stop). */
    int patience;
    const char *keep_best;
    /* Train data-parallel across the ranks of cf_dist_init (see "Data-parallel
     * training"); one rank, or 0: alone. */
    int distributed;
    /* A quick try of a model: each epoch trains its first limit_batches batches (of
     * its order: another share of shuffled data each epoch; for text, the first
     * limit_batches steps of each stream), and each evaluation (validation, test)
     * reads limit_batches batches of samples spread evenly over its data (sample
     * p * n / m of m; text: its first limit_batches batches, of streams their first
     * steps), so that data in class order (an image folder) is scored on every
     * class, not on its first; the schedule counts the steps so
     * limited. Checkpoints record it; a resumed run with another limit is told (on
     * on_warning), and a place past the new epoch's end resumes at its last batch.
     * 0: no limit. */
    long limit_batches;
    /* Random transforms of each training sample, for a model whose input is an image
     * (C, H, W): a comma list of "crop:P" (pad P pixels of 0 on each side, crop back
     * at a random shift in [-P, P] on each axis), "flip" (left to right, with
     * probability 1/2), "erase" or "erase:P" (random erasing, probability P, default
     * 0.5), as torchvision's RandomCrop(size, padding = P), RandomHorizontalFlip and
     * RandomErasing; always in that order, crop and flip before the standardisation
     * of the inputs and erasing after it. Never applied to evaluation. Each sample's
     * transform is drawn from (seed, epoch, the sample's index) alone: the same at
     * any thread count and across a resume. Checkpoints record it. NULL or "none":
     * none. See cf_augment_check. */
    const char *augment;
    /* Label smoothing ε for cross-entropy, 0 <= ε < 1 (0: none): in training the
     * targets are (1 - ε) onehot + ε / C, PyTorch's CrossEntropyLoss(label_smoothing =
     * ε); the validation and test losses stay the plain cross-entropy. Mean squared
     * error refuses it. Checkpoints record it; a resumed run must use the same. */
    double label_smoothing;
} cf_fit_opts;

CF_API cf_fit_opts cf_fit_defaults(void);

/* Whether spec is augmentation (cf_fit_opts.augment) that a model whose input is
 * `input` ((C, H, W), with or without its batch dimension) can take: 0, or -1 with the
 * error naming the bad part (a word that is no transform, a padding that is not a
 * whole number below the image's sides, a probability outside (0, 1], an input that
 * is not an image). */
CF_API int cf_augment_check(const char *spec, cf_shape input);

/* The epoch (1-based) of the lowest of n validation losses, each `stride` bytes after
 * the one before (&history[0].val_loss, sizeof *history), into *best_epoch (0 when
 * none is a number); 1 when the last `patience` of them all came after it without
 * improving on it (early stopping: stop), else 0. */
CF_API int cf_early_stop(const double *val_loss, size_t stride, int n, int patience, int *best_epoch);

/* A model in training: the model (with its loss), an optimizer, the executors, the
 * place reached in the run. */
typedef struct cf_trainer cf_trainer;

/* Prepare to train m on data like `train`: adds the loss o->loss, or if that is 0
 * and the model has none, cross-entropy for a model whose output 0 is a softmax and
 * mean squared error for any other; checks that the data fits the model's input and
 * output; binds. NULL and the error otherwise (CF_LOSS_XENT on a model that does not
 * end with softmax names the layer it ends with). */
CF_API cf_trainer *cf_trainer_new(cf_model *m, const cf_dataset *train, const cf_fit_opts *o);
CF_API void        cf_trainer_free(cf_trainer *t);

/* Train from the place reached up to o->epochs, evaluating on test (may be NULL)
 * after each epoch. Same seed, data and thread count: bitwise the same parameters.
 * Before the first step the data is checked whole: every number finite, labels in
 * range, and a classifier's training labels not all one class. Training stops with
 * an error, before the update that would spoil the parameters, when the loss is not
 * finite or grows past 10^4 times the run's first (the largest of its first 16 steps,
 * and at least 1).
 * Sequential data (text, cf_dataset_sequential) is not shuffled: with batch B and
 * K = n / B, it is read as B streams of K contiguous samples, batch k's row i being
 * sample i*K + k, so that each row goes on where it left off in the batch before; the
 * n - K*B samples past the last whole batch are left out (n < B is an error), and
 * evaluation reads test and validation data the same way (in one batch of n when
 * n < B). Text data must have no more distinct characters than the model's classes.
 * Returns 0 when done (or on_epoch asked to stop), CF_STOPPED when cf_trainer_stop
 * asked (the place reached can be saved with cf_trainer_save), or -1. */
#define CF_STOPPED 1
CF_API int cf_fit(cf_trainer *t, const cf_dataset *train, const cf_dataset *test);
/* Ask cf_fit to stop after the step it is running: it returns CF_STOPPED. Safe to call
 * from a signal handler or another thread. cf_trainer_stop_with gives the reason, a
 * number above 0 (the tool gives the signal's; cf_trainer_stop gives 1);
 * cf_trainer_stop_reason is it once cf_fit has stopped (0 before any), in
 * data-parallel training the largest of every rank's, so that every rank reports the
 * reason one of them was given. */
CF_API void cf_trainer_stop(cf_trainer *t);
CF_API void cf_trainer_stop_with(cf_trainer *t, int reason);
CF_API int  cf_trainer_stop_reason(const cf_trainer *t);
CF_API int     cf_trainer_epoch(const cf_trainer *t);          /* epochs done */
CF_API size_t  cf_trainer_epoch_samples(const cf_trainer *t);  /* samples of the next epoch done */
CF_API cf_loss cf_trainer_loss(const cf_trainer *t);           /* the loss it trains */
/* Every epoch done so far, in order, including those of the run a checkpoint
 * resumed; *h is valid until the next cf_fit or cf_trainer_load. Returns the count. */
CF_API int     cf_trainer_history(const cf_trainer *t, const cf_epoch_stats **h);

/* A checkpoint: the parameters (and input standardisation), the optimizer's state,
 * the place reached (within an epoch too), the run's settings and a hash of the
 * model's graph, with its source text, in one safetensors file written crash-safe.
 * Loading it into a trainer of the same model resumes training exactly where it
 * stopped (bitwise, with the same settings). A checkpoint of another model or
 * optimizer, or with metadata out of range or inconsistent, is refused; settings that
 * changed (seed, learning rate, schedule, batch size, epochs, validation fraction,
 * amount of data) are passed to on_warning: the schedule goes on by the share of the
 * run done, so a batch size or a number of epochs may change. */
CF_API int cf_trainer_save(cf_trainer *t, const char *path);
CF_API int cf_trainer_load(cf_trainer *t, const char *path);
/* A run on text data (cf_dataset_vocab) keeps the text's vocabulary in its checkpoints
 * (metadata "text_vocab": the bytes ascending, printable ASCII as itself, '\' as "\\",
 * others as "\xNN"); cf_trainer_load refuses a checkpoint whose vocabulary is not the
 * data's (or that has one when the data is not text, or none when it is). This reads
 * it back into vocab[0 .. count): the count (1 .. 256), 0 when the checkpoint has none
 * (not trained on text), or -1 with the error. Class index i is byte vocab[i]. */
CF_API int cf_checkpoint_vocab(const char *path, unsigned char vocab[256]);
/* The batch size a checkpoint's run trained with: evaluating text in batches of it
 * reads the same streams, with the same carried state, as the run's own test figures
 * did. 0 for a parameter file (no run), -1 with the error. */
CF_API int cf_checkpoint_batch(const char *path);
/* A run's frozen parameters (CF_GRAD_NONE) are kept in its checkpoints, and
 * cf_trainer_load refuses a checkpoint whose run froze others. This freezes, in m,
 * the parameters the checkpoint's run froze (before the trainer is made), so that a
 * resumed run keeps them fixed: their count (0 for none or a parameter file), or -1
 * with the error (a name the model lacks). */
CF_API int cf_checkpoint_freeze(const char *path, cf_model *m);

/* Input standardisation, part of the model: x' = (x - mean) / std for each of the
 * count numbers of input 0's sample, applied by cf_fit, cf_evaluate and cf_predict as
 * they copy samples in (not by cf_forward on an executor). cf_fit with o.normalize
 * fits it on the training split when the model has none; parameter files and
 * checkpoints carry it ("input.mean", "input.std"). mean NULL removes it. 0 or -1. */
CF_API int    cf_model_set_input_norm(cf_model *m, const float *mean, const float *std, size_t count);
CF_API size_t cf_model_input_norm(const cf_model *m, const float **mean, const float **std);  /* count; 0: none */
/* Target standardisation, for regression: y' = (y - mean) / std for each of the count
 * numbers of output 0's sample. cf_fit and cf_evaluate standardise the targets as they
 * copy them in (so their losses are in standardised units), and cf_predict undoes it on
 * output 0 (y = out * std + mean), so predictions and cf_evaluate_metrics are in the
 * targets' own units. cf_fit with o.normalize fits it on the training split for a
 * model trained with mean squared error, when the model has none; parameter files and
 * checkpoints carry it ("target.mean", "target.std"). A model whose output ends with
 * softmax refuses it. mean NULL removes it. 0 or -1. */
CF_API int    cf_model_set_target_norm(cf_model *m, const float *mean, const float *std, size_t count);
CF_API size_t cf_model_target_norm(const cf_model *m, const float **mean, const float **std);  /* count; 0: none */
/* For a loop of your own over an executor, what cf_predict does around cf_forward:
 * standardise n samples of input 0 in place (nothing without input standardisation),
 * and undo the target standardisation on n samples of output 0 (nothing without it). */
CF_API void   cf_model_norm_inputs(const cf_model *m, float *x, size_t n);
CF_API void   cf_model_denorm_outputs(const cf_model *m, float *out, size_t n);

/* Notes a model keeps with its weights, as a PyTorch user keeps a dict beside a
 * state_dict: short strings by key (1 to 64 of a-z, 0-9, '_', '.', '-'; a value up to
 * 64 KiB; at most 64 notes), saved by cf_model_save_params and cf_trainer_save as the
 * metadata "info.KEY" and read back by loading (a file's notes replace the model's).
 * The tool keeps there how a model's data was read (the data spec, the label column,
 * the features), so that eval and predict read new data the same way. value NULL
 * removes a note. 0 or -1. */
CF_API int         cf_model_set_info(cf_model *m, const char *key, const char *value);
CF_API const char *cf_model_info(const cf_model *m, const char *key);   /* NULL: none */
CF_API int         cf_model_info_count(const cf_model *m);
CF_API const char *cf_model_info_key(const cf_model *m, int i);          /* in key order */
/* The notes of how a model's training data was read, as cflux train keeps them: "data"
 * (the spec), "label" (the label column's header name, else its number from 0; none
 * for data without columns), "columns" (a CSV file's columns; none for other data),
 * "features" and "only_classes" (as given, the tool's --features and --only-classes;
 * NULL: none), and "input_range", "MIN MAX": the least and greatest of its inputs' values
 * (an image folder's, not decoded for it, [0, 1] as its pixels are scaled; none for
 * text or an embedding's indices), that predict and eval compare new inputs with.
 * 0 or -1. */
CF_API int         cf_model_note_data(cf_model *m, const char *spec, const cf_dataset *train, const char *features,
                                      const char *only_classes);
/* The note "input_range" alone, of data without a spec (arrays, say). 0 or -1. */
CF_API int         cf_model_note_input_range(cf_model *m, const cf_dataset *train);

/* The names of the classes of output 0 (as many as its last dimension), part of the
 * model like its input standardisation: parameter files and checkpoints keep them
 * (metadata "class_names"), and eval, predict and the report print them. A name is
 * 1 to 100 bytes without control characters. names NULL removes them. 0 or -1. */
CF_API int cf_model_set_class_names(cf_model *m, const char *const *names, int n);
CF_API int cf_model_class_names(const cf_model *m, const char *const **names);   /* count; 0: none */
/* The class names that a parameter file or checkpoint keeps, set on m without reading
 * its weights (to read data whose labels are words with the model's classes before
 * the weights are loaded). 0, also when the file keeps none (m's are left as they
 * are), or -1. */
CF_API int cf_model_load_class_names(cf_model *m, const char *path);

/* Mean loss and accuracy (NAN for regression) of a model over a dataset (the loss the
 * model has, or as cf_trainer_new chooses). */
CF_API int cf_evaluate(cf_model *m, const cf_dataset *d, int batch, double *loss, double *accuracy);
/* The same over limit_batches batches of d alone, as cf_fit evaluates with
 * o.limit_batches: samples spread evenly over d (text: its first limit_batches
 * batches, of streams the first steps of each); 0: all of d. */
CF_API int cf_evaluate_ex(cf_model *m, const cf_dataset *d, int batch, long limit_batches, double *loss,
                          double *accuracy);
/* Output 0 for every sample of d, into out (count * output size floats). */
CF_API int cf_predict(cf_model *m, const cf_dataset *d, int batch, float *out);
/* Every output: outs[i] (count * output i's size floats, or NULL: not wanted) for each
 * of the model's cf_model_output_count outputs. */
CF_API int cf_predict_outputs(cf_model *m, const cf_dataset *d, int batch, float *const *outs);

/* ---- 8-bit inference ----------------------------------------------------------------
 *
 * cf_model_quantize quantizes the model's products (the matrices of its Affine layers
 * and the kernels of its Conv2D layers of one group) for inference: each weight
 * matrix to int8 (-127..127) with a scale per output column (per output channel of a
 * convolution), symmetric; each product's input to 7 bits (0..127) with a scale and a
 * zero point, measured as it runs, per row of an Affine's input and per sample of a
 * convolution's (CF_QUANT_DYNAMIC), or fixed from the least and greatest value seen
 * on calibration data (CF_QUANT_STATIC: `batches` batches of `batch` samples of calib,
 * spread over it). CF_QUANT_AUTO is static when calib is given, else dynamic. Binds that do not train then
 * run those products in 8-bit integers, with the bias and relu (and after a
 * convolution, a batch norm and a 2x2 max-pooling) in the product's epilogue; training
 * binds, and all binds after cf_model_use_quantized(m, 0), run float32 products of the
 * dequantized weights (the integers times their scales, which is what the model's
 * parameters now hold). An update of the parameters (cf_optim_step, cf_update_sgd)
 * drops the quantization: the integers no longer match them. cf_model_save_params saves the
 * integers (safetensors I8), the scales ("NAME.qscale") and a fixed input range
 * ("NAME.qinput": scale, zero point), and loading such a file quantizes the model
 * again; a scale that is not a finite number above 0, or a count that does not fit,
 * is refused naming the tensor. Returns the count of products quantized, or -1. */
#define CF_QUANT_AUTO    0
#define CF_QUANT_DYNAMIC 1
#define CF_QUANT_STATIC  2
typedef struct cf_quantize_options {
    int activations;   /* CF_QUANT_AUTO (0), CF_QUANT_DYNAMIC or CF_QUANT_STATIC */
    int batches;       /* calibration batches; 0: 10 */
    int batch;         /* their size; 0: 100 */
} cf_quantize_options;
CF_API int  cf_model_quantize(cf_model *m, const cf_dataset *calib, const cf_quantize_options *o);
CF_API int  cf_model_quantized_count(const cf_model *m);   /* products quantized; 0: none */
CF_API void cf_model_use_quantized(cf_model *m, int on);   /* 1 (the default) or 0 */
/* The 8-bit products' kernel ("avx512-vnni", "avx-vnni", "avx2", "portable"), chosen
 * by cpuid (AVX-512 VNNI, else AVX-VNNI, else AVX2, else portable C) or by
 * $CFLUX_QGEMM, and why. */
CF_API const char *cf_int8_kernel(void);
CF_API const char *cf_int8_kernel_why(void);

/* What evaluation says beyond the loss. Classification (a model trained with
 * cross-entropy, or ending with softmax): the confusion matrix, confusion[t * classes
 * + p] predictions of class p for samples of class t; per class precision, recall, F1
 * and support (precision 0 for a class never predicted, F1 0 when both are 0; recall
 * and F1 NaN for a class absent from the data); their macro averages over the classes
 * present; accuracy and, with top_k > 0, the share whose class is among the top_k most
 * probable. Every position of a sequence counts as one prediction. Regression: MSE,
 * MAE and R² over every target number (classes 0; R² NaN when the targets do not
 * vary). Fields that do not apply are NaN or NULL. */
typedef struct cf_metrics {
    size_t count;              /* predictions scored */
    int classes;               /* 0: regression */
    double accuracy;
    int top_k;
    double top_k_accuracy;
    long *confusion;           /* classes * classes */
    double *precision, *recall, *f1;
    long *support;             /* samples of each class */
    double macro_precision, macro_recall, macro_f1;
    double mse, mae, r2;
} cf_metrics;

/* The metrics of the model's output 0 on d (predicted in batches of batch). */
CF_API int  cf_evaluate_metrics(cf_model *m, const cf_dataset *d, int batch, int top_k, cf_metrics *r);
/* The same over limit_batches * batch samples spread evenly over d (0: all of them),
 * the samples that cf_evaluate_ex scores for data that is not sequential. */
CF_API int  cf_evaluate_metrics_ex(cf_model *m, const cf_dataset *d, int batch, long limit_batches, int top_k,
                                   cf_metrics *r);
/* The same from outputs already computed: n samples of out_size outputs and
 * target_size targets each (class indices when classify). */
CF_API int  cf_metrics_compute(const float *outputs, size_t out_size, const float *targets, int target_size, size_t n,
                               int classify, int top_k, cf_metrics *r);
CF_API void cf_metrics_free(cf_metrics *r);

/* 8-bit pixels (h rows of w, channels 1: grey, 3: RGB) as a PNG file in memory:
 * *out malloc'd, *len its bytes (for pages that show images inline). 0 or -1. */
CF_API int cf_png_encode(const unsigned char *pixels, int w, int h, int channels, unsigned char **out, size_t *len);

/* ---- Interoperability ------------------------------------------------------------
 *
 * PyTorch: a state_dict saved with safetensors (safetensors.torch.save_file) read into
 * a model's parameters and running statistics, and written back in PyTorch's layout.
 * Each layer of the model declares how its parameters appear in PyTorch (torch(...)
 * in its net's body; the standard library's layers declare nn.Linear, nn.Conv2d,
 * nn.BatchNorm2d, nn.Embedding, nn.RNN, nn.GRU and nn.LSTM). Modules are matched to
 * layers in order (numbered modules, as nn.Sequential's, in natural order), else by
 * their tensors' names and shapes; map_path (NULL: none) names a file of explicit
 * "torch_name cflux_name" lines, a module to a layer ("lstm 2") or a tensor to a
 * parameter ("lstm.weight_ih_l0 2.W"). Every tensor is accounted for: one that
 * matches nothing, a parameter that nothing fills, a dtype that is not a float and a
 * shape that does not fit are errors that name the tensor, and nothing is changed.
 * notes (NULL: none) receives a line for what was deliberately left out (a
 * BatchNorm's num_batches_tracked). The model is sealed if it is not yet. Import
 * remembers each layer's PyTorch module name; cf_model_save_params keeps it, and
 * export writes those names again (else nn.Sequential's: the Chain's positions from
 * 0, or map_path's). 0 or -1. */
CF_API int cf_model_import_torch(cf_model *m, const char *path, const char *map_path, FILE *notes);
CF_API int cf_model_export_torch(cf_model *m, const char *path, const char *map_path);

/* ONNX (opset 17): the model's forward function for inference, with its parameters
 * and running statistics as initializers, a symbolic batch dimension, and the model's
 * input names; outputs are "y" (or "y1", "y2", ... for several). An unrolled
 * recurrent model is written step by step; a carried state starts from its initial
 * value at every run. Written crash-safe. 0 or -1. */
CF_API int cf_model_export_onnx(cf_model *m, const char *path);

/* ---- Data-parallel training (Open MPI) ----------------------------------------------
 *
 * In a build with MPI (CFLUX_MPI; cf_dist_available() says), `mpirun -np N` starts N
 * processes (ranks) of one program; each calls cf_dist_init (or, inside a larger MPI
 * program, cf_dist_init_comm in cflux_mpi.h) and trains with cf_fit_opts.distributed
 * set. Every rank then holds the whole model (rank 0's parameters broadcast at the
 * start) and takes its share of the rows of every batch (o.batch stays the global
 * batch); after backward the gradients are summed across ranks, each weighted by its
 * share of the rows, so every rank applies the update one process would on the whole
 * batch. The sums run in buckets as backward finishes them, overlapping the rest of
 * backward. Losses, accuracies and evaluations (sharded) are summed the same way, so
 * every rank sees the same figures and makes the same decisions; after each epoch
 * the running statistics are averaged and the parameters compared by checksum (an
 * error when a rank's differ). Before the first step the ranks compare what they were
 * given (the model's graph, the rows and contents of the training and test data, and
 * every setting that decides the steps); when a rank's differ, cf_fit fails on every
 * rank with the same message, "error: the ranks disagree: rank 1's --batch is 32,
 * rank 0's is 64", and cf_dist_error_shared() says so: rank 0's report is enough, and
 * cf_dist_abort does nothing, since every rank stops on its own. A rank that dies or
 * hangs makes the others' cf_fit
 * fail with an error after $CFLUX_DIST_TIMEOUT seconds (20) instead of waiting
 * forever; the program then stops the job with cf_dist_abort. Dropout
 * draws each rank's own masks (cf_exec_set_stream). Only rank 0 should write files.
 * Without MPI, cf_dist_init fails and the rest says one rank of one. */
CF_API int  cf_dist_available(void);   /* 1 when built with MPI */
CF_API int  cf_dist_init(void);        /* MPI_Init_thread when needed; MPI_COMM_WORLD. 0 or -1 */
CF_API int  cf_dist_rank(void);        /* this rank, from 0 (0 when not distributed) */
CF_API int  cf_dist_size(void);        /* the ranks (1 when not distributed) */
CF_API void cf_dist_abort(void);       /* stop every rank (MPI_Abort) after an error */
CF_API int  cf_dist_error_shared(void);   /* 1: every rank met the last error together */
CF_API void cf_dist_finalize(void);    /* MPI_Finalize, when cf_dist_init initialised MPI */
/* Seconds a data-parallel trainer has spent waiting on the other ranks (the part of
 * the gradient sums that backward did not hide, and the sums of losses); 0 alone. */
CF_API double cf_trainer_wait_seconds(const cf_trainer *t);

/* ---- Model summary -----------------------------------------------------------------
 *
 * A table of the model as Keras's model.summary() prints it, each row tied to the
 * source: the inputs, then each item of the top-level Chain (the layers of an unrolled
 * Chain, the calls inside a user's net) by template and the file:line:col where it is
 * called, or by op (relu, flatten) where one is used there directly; steps of an
 * unroll share a row ("(B, 128) ×50"). A row gives its output shape, its parameters by
 * name and count (running statistics marked as not trained), FLOPs per sample forward
 * and backward, and its activations: the bytes of the values its nodes make per
 * sample (4 a number), which training keeps for backward. Totals at the end. Only what
 * the outputs need counts (not a training loss); no weights are needed, only shapes.
 *
 * FLOPs per sample, as the kernels compute them: a matrix product or convolution 2
 * per multiply-add (x (n, k) W (k, m): 2nkm), and as much again backward for each of
 * its inputs that takes a gradient (W unless frozen; x when a trainable parameter lies
 * before it, so never the model's inputs). Elementwise ops (+ - .* ./ relu clamp σ tanh
 * exp log softplus gelu dropout) 1 per output element, and backward 1 per element for each
 * input that takes a gradient. Per element: softmax 5 forward, 4 backward; batchnorm
 * (training) 6, and 5 backward plus 4 for dx; layernorm 8, and 5 backward plus 11 for
 * dx; maxpool k·k (comparisons) per output, 1 back; avgpool k·k + 1 both ways; sum,
 * mean 1 per element summed, 1 per output back; embedding 0, 1 per output element back
 * into the table; reshape, flatten, slice, concat, transpose 0. An LSTM over T steps
 * of I inputs, H units (G = 4H): 2TIG + TG + 2THG + 9TH forward; backward 24TH +
 * 2(T-1)HG, plus 2THG for U, TG for b, 2TIG for W and 2TIG for its input as wanted (an
 * Embedding folded in is counted so, though the engine does E W once a batch).
 * docs/training.md has the whole table.
 *
 * cf_model_summary writes the table (json 0) or one JSON object (json 1) with "rows"
 * (name, kind, place, output, output_shape with -1 for B, calls, params [name, shape,
 * count, kind trained/frozen/statistic], flops_forward, flops_backward,
 * activation_bytes) and "totals". batch 0 writes B for the batch; batch N writes N and
 * totals the activations of a batch of N. cf_model_flops gives the whole model's FLOPs
 * per sample. 0, or -1 with the error (for a model whose shapes do not fit, the shape
 * error).
 *
 * cf_model_summary_ex writes the rows as a tree, `depth` levels deep, as torchinfo's
 * summary(model, depth=N): depth 1 is cf_model_summary's table. Below it, a row of a
 * layer made of calls (a net such as GPT or TransformerBlock, a Chain, repeat's Chain;
 * not an Affine, made of ops) is followed by the rows of the calls and ops inside it,
 * indented two more columns, down to `depth` levels; the same call repeated at one
 * place is one row ("×4"). A row's params count, FLOPs and activations are the totals
 * of everything under it; its list names only the parameters no row under it lists
 * (GPT's P). The totals are the same at every depth. JSON rows carry "depth" (1 at the
 * top) and "parent" (the index of the row it is under in "rows", or -1); so does
 * cf_model_summary's. depth below 1 is an error. */
CF_API int cf_model_summary(cf_model *m, int batch, int json, FILE *out);
CF_API int cf_model_summary_ex(cf_model *m, int batch, int json, int depth, FILE *out);
CF_API int cf_model_flops(cf_model *m, double *forward, double *backward);

/* ---- Images ------------------------------------------------------------------------
 *
 * PNG or JPEG files as inputs, for prediction: n files become a dataset of n samples
 * (targets 0, no classes), named after the first file, each converted to what the
 * sample shape asks for. sample is a per-sample shape; a leading CF_BATCH is dropped, so
 * cf_model_input_shape(m, 0) may be passed as it is:
 *   (C, H, W)  C = 1 grey or 3 colour (planes R, G, B), H x W pixels
 *   (H, W)     grey, H x W
 *   (N)        grey S x S when N = S*S (784: 28 x 28); colour, planes R, G, B, when
 *              N = 3*S*S; any other shape is an error ("does not say an image size")
 * Every PNG is read: grey, grey + alpha, RGB, RGBA, palette, 1 to 16 bits, interlaced;
 * every 8-bit JPEG: grey, YCbCr, RGB, CMYK, YCCK (Adobe's inverted CMYK: R = C K,
 * G = M K, B = Y K of the stored values over 255), baseline or progressive (at most
 * 100 scans), Huffman or arithmetic coded. The format is told by the first bytes, not the name.
 * Values scale as the IDX reader's: 8-bit b is (float)b / 255 (the same floats as an
 * IDX file of those bytes), 16-bit v is v / 65535; no gamma correction. Transparency
 * is composited over black; colour becomes grey by BT.601 luma (0.299 R + 0.587 G +
 * 0.114 B), grey becomes colour by repetition. An image of another size is shrunk by
 * area averaging or enlarged bilinearly (pixel centres, edges clamped), each axis on
 * its own, deterministically. Images may have at most 16384 pixels a side and 2^26
 * in all. NULL and the error ("error: FILE: ...": not a PNG or JPEG image, truncated,
 * corrupt, unsupported, too large, out of memory), which names the file, and nothing
 * is kept. */
CF_API cf_dataset *cf_dataset_load_images(const char *const *paths, int n, cf_shape sample);

/* ---- Learning-rate range test ----------------------------------------------------
 *
 * Leslie Smith's range test (fastai's lr_find), as `cflux lr-find` runs it: one
 * training step at each of o.steps learning rates, lr_i = start * (end/start)^(i/(steps-1)),
 * on batches of the training data drawn in the order of a shuffle from o.seed (a new
 * shuffle when one is used up; text is read as cf_fit reads it, as B streams). Each
 * step's loss is smoothed, fastai's way: avg = 0.98 avg + 0.02 loss, smooth = avg /
 * (1 - 0.98^(i+1)). The run stops early, before that step's update, when the smoothed
 * loss is not finite or passes 4 times the lowest so far (diverged), or when a
 * gradient is not finite.
 * The suggestion is fastai's "steep" rule: the rate where the smoothed loss falls
 * fastest against log lr, the left end of the steepest falling segment among points
 * steps/10 .. n-6 (the first tenth is start-up, the last five the blow-up), and, as
 * cflux adds, up to the lowest smoothed loss (a dip after it is noise in the blow-up;
 * a loss that is lowest in the first tenth gets no suggestion). min_loss_lr is the rate
 * of the lowest smoothed loss; the classic rule of thumb is a tenth of it.
 * The model trains from the weights it has: fresh from its seed (cf_model_set_seed)
 * when it was not bound or initialised before, as the tool does. It is left trained
 * for those few steps at rising rates, which is rarely worth keeping: train afresh. */

typedef struct cf_lrfind_opts {
    double start, end;        /* the first and last learning rate: 1e-7 and 10; 0 < start < end */
    int steps;                /* steps (and rates) from start to end: 100, at least 5 */
    int batch;                /* 64 (the data's size, when it has fewer samples) */
    cf_optim_opts optim;      /* cf_optim_defaults("adam"); its lr is not used */
    uint64_t seed;            /* the order of the batches */
    cf_loss loss;             /* 0: from the model (see cf_trainer_new) */
    int normalize;            /* as cf_fit_opts: fit input standardisation when the model has none */
} cf_lrfind_opts;

typedef struct cf_lrfind_result {
    int n;                    /* the steps run: o.steps, or fewer when the run diverged */
    double *lr;               /* (n) each step's learning rate */
    double *loss;             /* (n) each step's loss, before its update (NAN or inf where it blew up) */
    double *smooth;           /* (n) the smoothed loss */
    int diverged;             /* 1: stopped because the loss blew up (or a gradient was not finite) */
    int suggested_at;         /* the suggestion's step, or -1: too few steps, or the loss never fell */
    int min_at;               /* the step of the lowest smoothed loss, or -1 */
    double suggested;         /* lr[suggested_at], or NAN */
    double min_loss_lr;       /* lr[min_at], or NAN */
} cf_lrfind_result;

CF_API cf_lrfind_opts cf_lrfind_defaults(void);
/* Run the test on m with data like cf_fit's (checked the same way; the loss is added
 * to m). *r is filled (free it with cf_lrfind_result_free) and 0 returned, also when
 * the run diverged: that is the test's normal end. -1 with the error for bad options
 * (start >= end, steps < 5), data that does not fit, a model with nothing to train;
 * *r then holds nothing. */
CF_API int  cf_lrfind(cf_model *m, const cf_dataset *train, const cf_lrfind_opts *o, cf_lrfind_result *r);
CF_API void cf_lrfind_result_free(cf_lrfind_result *r);

#ifdef __cplusplus
}
#endif

#endif
