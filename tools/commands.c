/* commands.c - the tool's commands and the options each takes, as tables. The help
 * (`cflux help train`, `cflux train --help`) is made from them. */
#include <stddef.h>

#include "commands.h"
#include "options.h"

#define OFF(f) offsetof(args, f)
#define END {NULL, OPT_FLAG, 0, 0, 0, NULL, NULL}

#define THREADS {"--threads", OPT_INT, 1, 1024, OFF(threads), "N", "threads for the kernels (default: $CFLUX_THREADS or all CPUs)"}
#define MAXMEM {"--max-memory", OPT_SIZE, 0, 0, OFF(max_memory), "SIZE", "refuse to use more memory than SIZE, e.g. 4G (default:\n$CFLUX_MAX_MEMORY or the memory the process can have)"}
#define JSON {"--json", OPT_FLAG, 0, 0, OFF(json), NULL, "one JSON object of the results on stdout, alone (every other\nline goes to stderr)"}
#define DATA(what) {"--data", OPT_STR, 0, 0, OFF(data), "SPEC", what}
#define LABELCOL {"--label-col", OPT_STR, 0, 0, OFF(label_col), "COL", "CSV data: the column of the labels or targets, by its header\nname or number (0-based; -1 the last; default 0)"}, \
    {"--features", OPT_STR, 0, 0, OFF(features), "COLS", "CSV data: the feature columns, names or numbers separated by\ncommas (default: every column but the label)"}
#define LIMIT {"--limit-batches", OPT_INT, 1, 1e9, OFF(limit_batches), "N", "stop each epoch's training and each evaluation after N batches\n(a quick try of a model)"}
#define IMAGES {"--skip-bad", OPT_FLAG, 0, 0, OFF(skip_bad), NULL, "image folders: skip files that cannot be read (counted) instead\nof stopping"}, \
    {"--exact-size", OPT_FLAG, 0, 0, OFF(exact_size), NULL, "image folders: refuse an image of another size than the model's\ninput instead of resizing it"}
#define LOSS {"--loss", OPT_STR, 0, 0, OFF(loss), "xent|mse", "cross-entropy on class labels or mean squared error on targets\n(default: xent for a model that ends with softmax, else mse)"}

#define FREEZE {"--freeze", OPT_LIST, 0, 0, OFF(freeze), "PATTERN", "keep the parameters whose names match fixed (a glob over the\nnames cflux summary prints: '1.*', '*.body.*', '4.K'; again for\nmore): no gradient, no update, no weight decay; a batchnorm whose\nγ and β are frozen normalises with its running statistics and\nleaves them unchanged"}
#define ONLY_CLASSES {"--only-classes", OPT_STR, 0, 0, OFF(only_classes), "LIST", "only the samples of these classes, numbered 0.. in the list's\norder: numbers, ranges or names, e.g. 0-4, 5,7,9 or Sandal,Bag"}

static const opt check_opts[] = {MAXMEM, END};

static const opt shapes_opts[] = {
    {"--batch", OPT_INT, 1, 1 << 20, OFF(batch), "N", "write N for the batch dimension B"},
    END,
};

static const opt graph_opts[] = {
    {"-o", OPT_STR, 0, 0, OFF(out), "FILE", "write to FILE instead of the standard output"},
    END,
};

static const opt train_opts[] = {
    DATA("fashion-mnist (default), idx:TRAIN_IMAGES,TRAIN_LABELS[,TEST_IMAGES,\nTEST_LABELS], csv:TRAIN[,TEST], images:DIR[,TESTDIR] (a folder of class\nfolders of PNG and JPEG images, read as the model's input, streamed) or\ntext:PATH (a file, a folder of files or files separated by commas; the\nlast 10% of each file the test set; sequences of the model's input length)"),
    LABELCOL,
    IMAGES,
    LOSS,
    {"--label-smoothing", OPT_NUM, 0, 0.99, OFF(label_smoothing), "X", "cross-entropy against (1 - X) onehot + X / classes, as\nPyTorch's CrossEntropyLoss(label_smoothing=X) (0; training only:\nthe test and validation losses stay plain)"},
    {"--normalize", OPT_FLAG, 0, 0, OFF(normalize), NULL, "standardise each input feature, and a regression's targets, with\nthe training split's mean and std (kept in the checkpoint; eval and\npredict apply it, and give predictions in the targets' units)"},
    {"--epochs", OPT_INT, 1, 1e6, OFF(epochs), "N", "epochs to train (10)"},
    {"--batch", OPT_INT, 1, 1 << 20, OFF(batch), "N", "samples per step (64)"},
    LIMIT,
    {"--stop-after", OPT_INT, 1, 1e6, OFF(stop_after), "N", "stop after epoch N of the --epochs planned (resume later)"},
    {"--optim", OPT_STR, 0, 0, OFF(optim), "NAME", "sgd, momentum, nesterov, adam, adamw (default adam)"},
    {"--lr", OPT_NUM, 1e-12, 1e6, OFF(lr), "X", "learning rate (sgd family 0.1, adam family 0.001)"},
    {"--momentum", OPT_NUM, 0, 0.9999, OFF(momentum), "X", "momentum of momentum and nesterov (0.9)"},
    {"--wd", OPT_NUM, 0, 1e6, OFF(wd), "X", "weight decay (0; adamw 0.01)"},
    {"--clip", OPT_NUM, 0, 1e12, OFF(clip), "X", "clip the gradients' global norm to X"},
    {"--schedule", OPT_STR, 0, 0, OFF(schedule), "S", "const, step:E:G or cosine (default), each optionally\nfollowed by +warmup:N"},
    {"--val", OPT_NUM, 0, 0.99, OFF(val), "X", "hold out a fraction X of the training data for validation"},
    {"--augment", OPT_STR, 0, 0, OFF(augment), "SPEC", "random transforms of image inputs (C, H, W), in training only:\ncrop:P (pad P pixels of 0, crop at a random shift in [-P, P]),\nflip (left to right, half the samples), erase[:P] (random erasing,\nprobability P, 0.5), comma-separated; none (default) for none"},
    {"--seed", OPT_U64, 0, 0, OFF(seed), "N", "everything random: initialisation, shuffling, augmentation (0)"},
    THREADS,
    MAXMEM,
    {"--init", OPT_STR, 0, 0, OFF(init), "FILE", "start from the weights in FILE (a checkpoint or a parameter\nfile, matched by name) instead of random ones"},
    {"--params", OPT_STR, 0, 0, OFF(init), "FILE", "the same as --init"},
    {"--partial", OPT_FLAG, 0, 0, OFF(partial), NULL, "--init loads the parameters whose names and shapes match, lists\nthe others (left as initialised) and the file's tensors the model\nlacks: fine-tuning with a new head"},
    FREEZE,
    ONLY_CLASSES,
    {"--save", OPT_STR, 0, 0, OFF(save), "PATH", "write a checkpoint after every epoch, and when interrupted"},
    {"--resume", OPT_STR, 0, 0, OFF(resume), "PATH", "continue the run saved in a checkpoint of the same model"},
    {"--log", OPT_STR, 0, 0, OFF(log), "CSV", "per-epoch figures as CSV (the whole run's, when resumed)"},
    {"--plot", OPT_STR, 0, 0, OFF(plot), "SVG", "loss and accuracy curves as SVG (the whole run's)"},
    {"--report", OPT_STR, 0, 0, OFF(report), "HTML", "a page of the run (summary, curves, confusion matrix, the\nworst-classified test images), rewritten after every epoch"},
    {"--patience", OPT_INT, 1, 1e6, OFF(patience), "N", "stop when the validation loss has not improved for N epochs\n(needs --val)"},
    {"--keep-best", OPT_STR, 0, 0, OFF(keep_best), "PATH", "write the checkpoint of the epoch with the best validation\nloss there (needs --val)"},
    {"--classes", OPT_STR, 0, 0, OFF(classes), "FILE", "the classes' names, one a line (Fashion-MNIST's are built in);\nkept in the checkpoint for eval, predict and the report"},
    JSON,
    {"--quiet", OPT_FLAG, 0, 0, OFF(quiet), NULL, "no header, model summary or epoch lines (nor the notes on the\nbest epoch and what was saved): the result line alone, e.g.\n'test accuracy 0.8512' (warnings and errors still go to stderr)"},
    END,
};

static const opt eval_opts[] = {
    {"--params", OPT_STR, 0, 0, OFF(params), "CKPT", "the trained weights (a checkpoint or a parameter file; required)"},
    DATA("the data to evaluate on: its test set when it has one, else\nall of it (default fashion-mnist)"),
    LABELCOL,
    IMAGES,
    LIMIT,
    LOSS,
    {"--batch", OPT_INT, 1, 1 << 20, OFF(batch), "N", "samples per step (256; text: the checkpoint's training\nbatch, so that its streams are the run's)"},
    {"--top", OPT_INT, 1, 1000, OFF(top), "K", "also the top-K accuracy (a class among the K most probable)"},
    ONLY_CLASSES,
    {"--classes", OPT_STR, 0, 0, OFF(classes), "FILE", "the classes' names, one a line (default: the checkpoint's)"},
    THREADS,
    MAXMEM,
    JSON,
    END,
};

static const opt predict_opts[] = {
    {"--params", OPT_STR, 0, 0, OFF(params), "CKPT", "the trained weights (a checkpoint or a parameter file; required)"},
    {"--batch", OPT_INT, 1, 1 << 20, OFF(batch), "N", "samples per step (256)"},
    {"--top", OPT_INT, 1, 1000, OFF(top), "K", "the K most probable classes of each sample (1)"},
    {"--classes", OPT_STR, 0, 0, OFF(classes), "FILE", "the classes' names, one a line (default: the checkpoint's)"},
    THREADS,
    MAXMEM,
    {"--json", OPT_FLAG, 0, 0, OFF(json), NULL, "one JSON array of the results"},
    END,
};

static const opt bench_opts[] = {
    {"--batch", OPT_INT, 1, 1 << 16, OFF(batch), "N", "samples per training step (64)"},
    {"--seconds", OPT_NUM, 0.1, 3600, OFF(seconds), "S", "time each of training and batch inference for S seconds (3)"},
    {"--params", OPT_STR, 0, 0, OFF(params), "FILE", "time these weights (a quantized parameter file runs its\nproducts in 8 bits) instead of random ones"},
    {"--int8", OPT_FLAG, 0, 0, OFF(int8), NULL, "quantize the products before timing inference and latency, as\ncflux quantize does (static inputs, calibrated on random samples\ndrawn as the timed ones)"},
    LOSS,
    THREADS,
    MAXMEM,
    JSON,
    END,
};

static const opt sample_opts[] = {
    {"--params", OPT_STR, 0, 0, OFF(params), "CKPT", "the trained weights: a checkpoint of a run on text (required)"},
    {"--length", OPT_INT, 1, 1e8, OFF(length), "N", "characters to generate (500)"},
    {"--temperature", OPT_NUM, 0.01, 100, OFF(temperature), "T", "below 1 surer, above 1 wilder (1: the model's own\nprobabilities)"},
    {"--prime", OPT_STR, 0, 0, OFF(prime), "TEXT", "text to read first, and to go on from (default: a newline)"},
    {"--seed", OPT_U64, 0, 0, OFF(seed), "N", "the draws: the same seed, the same text (0)"},
    {"--no-cache", OPT_FLAG, 0, 0, OFF(no_cache), NULL, "a GPT: compute its whole window again for every character\ninstead of keeping its keys and values (the same text, slower)"},
    THREADS,
    MAXMEM,
    END,
};

static const opt import_opts[] = {
    {"--from-torch", OPT_STR, 0, 0, OFF(from_torch), "FILE", "a PyTorch state_dict saved with safetensors (required)"},
    {"--save", OPT_STR, 0, 0, OFF(save), "PATH", "write the model's weights there, as a parameter file (required)"},
    {"--map", OPT_STR, 0, 0, OFF(map), "FILE", "lines 'torch_name cflux_name': a PyTorch module to a layer\n('lstm 2') or a tensor to a parameter ('lstm.weight_ih_l0 2.W')"},
    MAXMEM,
    END,
};

static const opt export_opts[] = {
    {"--params", OPT_STR, 0, 0, OFF(params), "CKPT", "the weights (a checkpoint or a parameter file; required)"},
    {"--to-torch", OPT_STR, 0, 0, OFF(to_torch), "FILE", "write a PyTorch state_dict in safetensors"},
    {"--onnx", OPT_STR, 0, 0, OFF(onnx), "FILE", "write an ONNX model (opset 17) for inference"},
    {"--map", OPT_STR, 0, 0, OFF(map), "FILE", "--to-torch: lines 'torch_name cflux_name' naming the modules\n(default: the names an import gave, else nn.Sequential's)"},
    MAXMEM,
    END,
};

static const opt summary_opts[] = {
    {"--batch", OPT_INT, 1, 1 << 20, OFF(batch), "N", "write N for the batch dimension B, and count memory for N"},
    {"--depth", OPT_INT, 1, 1000, OFF(depth), "N", "rows N levels deep: under a net's row, the calls and ops inside\nit (1, the default: the top level's rows alone)"},
    FREEZE,
    MAXMEM,
    JSON,
    END,
};

static const opt lrfind_opts[] = {
    DATA("as for train (default fashion-mnist)"),
    LABELCOL,
    IMAGES,
    LOSS,
    {"--batch", OPT_INT, 1, 1 << 20, OFF(batch), "N", "samples per step (64)"},
    {"--normalize", OPT_FLAG, 0, 0, OFF(normalize), NULL, "standardise each input feature (and a regression's targets) as\ntrain --normalize does"},
    {"--optim", OPT_STR, 0, 0, OFF(optim), "NAME", "sgd, momentum, nesterov, adam, adamw (default adam)"},
    {"--momentum", OPT_NUM, 0, 0.9999, OFF(momentum), "X", "momentum of momentum and nesterov (0.9)"},
    {"--wd", OPT_NUM, 0, 1e6, OFF(wd), "X", "weight decay (0; adamw 0.01)"},
    {"--clip", OPT_NUM, 0, 1e12, OFF(clip), "X", "clip the gradients' global norm to X"},
    {"--start", OPT_NUM, 1e-12, 1e6, OFF(lr_start), "LR", "the first learning rate (1e-7)"},
    {"--end", OPT_NUM, 1e-12, 1e6, OFF(lr_end), "LR", "the last learning rate (10)"},
    {"--steps", OPT_INT, 5, 1e6, OFF(steps), "N", "training steps from --start to --end (100)"},
    {"--seed", OPT_U64, 0, 0, OFF(seed), "N", "initialisation and shuffling (0)"},
    {"--plot", OPT_STR, 0, 0, OFF(plot), "SVG", "the loss against the learning rate as SVG"},
    THREADS,
    MAXMEM,
    JSON,
    END,
};

static const opt quantize_opts[] = {
    {"--params", OPT_STR, 0, 0, OFF(params), "CKPT", "the float32 weights (a checkpoint or a parameter file)"},
    {"--save", OPT_STR, 0, 0, OFF(save), "PATH", "write the quantized weights there, as a parameter file (required)"},
    DATA("the data the model was trained on (default fashion-mnist): its\ntraining part calibrates, its test part measures the accuracy"),
    LABELCOL,
    IMAGES,
    {"--activations", OPT_STR, 0, 0, OFF(activations), "MODE", "how each product's input is quantized: static (a range fixed on\nthe calibration batches; auto, the default), or dynamic (each row,\nor each sample of a convolution, measured as it runs)"},
    {"--calibration-batches", OPT_INT, 1, 1e6, OFF(calib_batches), "N", "static: batches of 100 training samples to calibrate on (10)"},
    THREADS,
    MAXMEM,
    JSON,
    END,
};

static const opt version_opts[] = {JSON, END};

static const opt none[] = {END};

const command cf_commands[] = {
    {"check", "MODEL", 1, "Compile MODEL (a .flux file) and check every shape; say what it holds.",
     "Nothing is allocated for the weights: a model too large to train is still checked.\n", check_opts, cmd_check},
    {"shapes", "MODEL", 1, "List the model's forward function with every value's shape.",
     "The step where shapes stop fitting is marked.\n", shapes_opts, cmd_shapes},
    {"graph", "MODEL", 1, "Write the model's graph in Graphviz DOT.", NULL, graph_opts, cmd_graph},
    {"train", "MODEL", 1, "Train MODEL; report loss and accuracy per epoch.",
     "Interrupted (Ctrl-C, SIGTERM), training stops after the current step; with --save\n"
     "a checkpoint of that place is written, and --resume continues from it. A second\n"
     "Ctrl-C stops at once.\n",
     train_opts, cmd_train},
    {"eval", "MODEL", 1, "Loss and accuracy of trained weights on data.", NULL, eval_opts, cmd_eval},
    {"predict", "MODEL INPUT...", 2, "Classes and probabilities (or the outputs) for each sample of INPUT.",
     "INPUT is an IDX file of images, a CSV file of numbers (every column a feature),\n"
     "or PNG or JPEG images (grey or colour; several may be given), each resized to\n"
     "the model's input and scaled as training data is (0..255 to 0..1).\n",
     predict_opts, cmd_predict},
    {"bench", "MODEL", 1, "Time training steps, batch inference and batch-1 latency on random data.",
     "After a warm-up: training steps (forward, loss, backward, SGD update) at --batch,\n"
     "inference at batch 1000, and the median latency of 10,000 single-sample calls\n"
     "(ten times fewer of both, until a batch costs under 25 GFLOP, for a larger model).\n"
     "Also the matrix products' GFLOP/s against one core's measured FMA peak, the peak\n"
     "memory while training, and which kernels ran and why; and for a GPT, characters/s\n"
     "generated one at a time against its cache of keys and values, as sample runs it.\n",
     bench_opts, cmd_bench},
    {"sample", "MODEL", 1, "Generate text from a character model trained on text:PATH.",
     "A recurrent MODEL runs one step at a time on batch 1 (its unroll over one step),\n"
     "sharing the trained weights and carrying its state from each character to the\n"
     "next. A GPT (causal attention over a window of T characters) runs one position\n"
     "at a time against a cache of its keys and values; when the window is full it\n"
     "goes on from its last T / 4 characters. --no-cache recomputes the window for\n"
     "every character instead (the same text). Each character is drawn from the\n"
     "model's probabilities.\n",
     sample_opts, cmd_sample},
    {"summary", "MODEL", 1, "Each layer: its output shape, parameters, FLOPs and memory per sample.",
     "A table as Keras's summary() prints, each row tied to the source (the layer's\n"
     "template or op and its file:line:col); totals at the bottom. Per sample: FLOPs\n"
     "forward and backward, and activations (bytes of the values a row makes, kept for\n"
     "backward). FLOPs: matrix products and convolutions 2 per multiply-add, the same\n"
     "again backward for each input that takes a gradient (never the model's inputs);\n"
     "elementwise ops 1 per element each way; softmax 5/4, batchnorm 6/5 (+4 for dx),\n"
     "maxpool k*k/1 per output; LSTM and the rest: docs/training.md.\n"
     "\n"
     "With --depth N, a row of a layer made of calls (a net such as GPT, its\n"
     "TransformerBlocks, a Chain) is followed by the rows of the calls and ops inside\n"
     "it, indented, N levels down, as torchinfo's summary(model, depth=N); a row's\n"
     "figures are the totals of everything under it, and the totals at the bottom are\n"
     "the same at any depth.\n",
     summary_opts, cmd_summary},
    {"lr-find", "MODEL", 1, "Train briefly over rising learning rates; suggest one.",
     "From fresh weights, one step at each learning rate from --start to --end\n"
     "(exponentially spaced), until the loss blows up; prints the smoothed loss against\n"
     "the rate and suggests the rate where it falls fastest.\n",
     lrfind_opts, cmd_lrfind},
    {"import", "MODEL", 1, "Read PyTorch weights (a state_dict in safetensors) into MODEL's parameters.",
     "Each PyTorch module goes to one layer of MODEL: in order when the modules are\n"
     "numbered (nn.Sequential), else by their tensors' names and shapes; --map says\n"
     "which when that is ambiguous. Linear's weight is transposed into Affine's W; an\n"
     "LSTM's two biases are summed. Every tensor is checked: one missing, left over,\n"
     "of a wrong dtype or shape is an error that names it, and nothing is written.\n",
     import_opts, cmd_import},
    {"export", "MODEL", 1, "Write trained weights for PyTorch (safetensors) or the model as ONNX.",
     "--to-torch writes the state_dict that PyTorch's model.load_state_dict takes:\n"
     "the same modules and layouts that import reads. --onnx writes the forward\n"
     "function with its weights, for onnxruntime and other ONNX runtimes (the batch\n"
     "dimension symbolic).\n",
     export_opts, cmd_export},
    {"quantize", "MODEL", 1, "Quantize trained weights to 8-bit integers for faster inference.",
     "Each Affine and Conv2D layer's weights become int8 with a scale per output\n"
     "channel (symmetric), and its input 7-bit integers with a scale and zero point,\n"
     "fixed from the ranges seen on calibration data (static, the default) or measured\n"
     "as it runs (dynamic).\n"
     "Prints the test accuracy of the float32 and of the quantized model, and writes\n"
     "a parameter file that eval, predict, bench and the C API load: inference then\n"
     "runs those products in 8-bit integers (the kernel: cflux version).\n",
     quantize_opts, cmd_quantize},
    {"help", "[COMMAND]", 1, "Say what the commands do, or what one command takes.", NULL, none, NULL},
    {"version", "", 0, "Print the version, the CPU and which kernels run, and why.", NULL, version_opts, cmd_version},
    {NULL, NULL, 0, NULL, NULL, NULL, NULL},
};
