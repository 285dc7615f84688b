"""The peers of `make bench`: a model of models/ in PyTorch 2 or in MXNet 1.9.1,
trained with softmax cross-entropy and SGD at lr 0.01, batch 64 (lstm, gpt: 32), on
random data (a pool of 64 random batches, cycled, as a data loader would hand them
over). One case per process, one JSON line on standard output. A benchmark, not a
test; bench/run.sh runs it with bench/pyenv.sh's python.

  python3 bench/peers.py torch|mxnet train|latency|infer [--model M] [--threads T] [--seconds S]
  python3 bench/peers.py torch-int8|ort-int8 latency|infer [--model mlp|cnn] [--threads T] [--seconds S]

  mlp      models/mlp.flux (the default): 784-128-64-10, relu, relu, softmax
  cnn      models/cnn.flux: inputs (B, 1, 28, 28); 5x5 convolution of 8 filters, relu,
           2x2 max-pooling, 5x5 convolution of 16, relu, 2x2 max-pooling, flatten,
           dense 256-10, softmax
  lstm     models/char-rnn.flux: a character model over sequences of T = 50 indices
           in 0..75 (B, 50); embedding 76 -> 64, one LSTM layer of 128 (batch first,
           zero initial state), dense 128-76 at every step, softmax, and the
           cross-entropy of every step, averaged over B x T (PyTorch: nn.Embedding,
           nn.LSTM, nn.Linear, F.cross_entropy over (B T, 76); MXNet: Gluon's
           nn.Embedding, rnn.LSTM(128, layout='NTC') and nn.Dense(76, flatten=False),
           hybridized, with SoftmaxCrossEntropyLoss and a Trainer's sgd). Its lines
           also give "seq_len": 50 and chars_per_sec = samples_per_sec x 50; its
           latency is one sequence of 50 at batch 1, its inference batches of 1000
           sequences
  resnet   models/resnet.flux (PyTorch only: MXNet is not run on it): inputs (B, 1, 28,
           28); a 3x3 convolution of RESNET_WIDTHS[0] filters without bias, batch
           normalisation, relu; then for each width of RESNET_WIDTHS, RESNET_BLOCKS
           basic blocks (torchvision's BasicBlock: 3x3 convolution (stride 2 in the
           first block of every stage but the first), batch norm, relu, 3x3
           convolution, batch norm, plus the input or, where the shape changes, a 1x1
           convolution of the same stride and a batch norm; relu), convolutions
           without bias; global average pooling; dense RESNET_WIDTHS[-1]-10, softmax.
           Trained in train mode (batch statistics), evaluated in eval mode
  gpt      models/char-gpt.flux (PyTorch only: MXNet 1.x has no causal attention
           to match, and run.sh skips it there): a character GPT over sequences of
           T = 64 indices in 0..75 (B, 64); token embedding 76 -> 128 plus learned
           positions (64, 128, zeros at first), dropout 0.25, then 4 pre-norm blocks
           (GPT-2's) of x + dropout(proj(attn(ln1(x)))) and
           x + dropout(fc2(gelu_tanh(fc(ln2(x))))), attention of 4 heads of 32 by
           F.scaled_dot_product_attention(is_causal=True, dropout_p 0.25 in
           training: PyTorch's CPU flash kernel takes no dropout, so training runs
           its unfused math path, inference the flash kernel), fc 128 -> 512, fc2
           512 -> 128; then ln_f, a head 128 -> 76 and the cross-entropy of every
           position, averaged over B x T. Every Linear and LayerNorm has a bias;
           821,068 parameters, as cflux's model. Still SGD at lr 0.01, as cflux
           bench trains every model (the file's own AdamW with clipping would add
           a few FLOPs a parameter a step, against 6 a parameter a token, 12,288
           a step: about 0.1%). Its lines give "seq_len": 64 and tokens_per_sec =
           samples_per_sec x 64; its latency is one sequence of 64 at batch 1, its
           inference batches of 100 sequences, as cflux bench's for a model this
           size (a batch of 1000 would take seconds)

  The int8 peers (the cases mlp and cnn, inference only): torch-int8 is the model
  above through torch.ao.quantization.quantize_dynamic(model, {nn.Linear}, qint8)
  (PyTorch's dynamic quantization covers Linear layers: the CNN's convolutions stay
  float32); ort-int8 is the same model exported with torch.onnx.export and quantized
  with onnxruntime.quantization.quantize_dynamic (weights QInt8, its default op types:
  MatMul and Conv as MatMulInteger and ConvInteger), run by onnxruntime's CPU
  provider with intra_op_num_threads T and sequential execution.

  train    training samples/s over S seconds after a 0.5 s warm-up, and the peak
           resident memory of the process (ru_maxrss) right after: the training's,
           since each case runs in its own process
  latency  median microseconds of one forward pass of one sample to the softmax
           output (PyTorch: in torch.inference_mode), over >= 10000 calls (lstm,
           gpt: 1000, each a whole sequence) and >= S s after a tenth as many
           warm-up calls
  infer    samples/s of forward passes of batches of 1000 (gpt: 100), over S seconds
  generate the GPT only: characters/s drawn one at a time at batch 1 with a cache of
           keys and values (torch_gpt_generate), over S seconds

Threads: OMP_NUM_THREADS, MKL_NUM_THREADS, OPENBLAS_NUM_THREADS and
MXNET_CPU_WORKER_NTHREADS are set to T before the framework is imported, and
PyTorch also gets torch.set_num_threads(T).

  {"peer": "torch", "model": "mlp", "case": "train", "threads": 1, "samples_per_sec": 87000.0, ...}

A sample is one input: an image of the MLP and the CNN, a sequence of 50 characters
of the LSTM, of 64 of the GPT.
"""
import argparse
import json
import os
import resource
import statistics
import sys
import time

SIZES = (784, 128, 64, 10)                 # the MLP's layers
SHAPE = {"mlp": (784,), "cnn": (1, 28, 28), "resnet": (1, 28, 28)}  # one sample's input
# the ResNet of models/resnet.flux: the widths of its stages, and blocks a stage
RESNET_WIDTHS, RESNET_BLOCKS = (32, 64, 128), 2
CLASSES = 10
BATCH, INFER_BATCH, POOL, LR = 64, 1000, 64, 0.01
# batches of inference inputs, cycled: as many as cflux bench's, so that every
# contender reads its inputs from as far (16 of the MLP's are 50 MB, past the L3 cache
# of many CPUs; until 2026-12-03 the peers cycled 8)
INFER_POOL = 16
# the LSTM: a character model, vocabulary V, embedding E, hidden H, T steps, batch 32
V, EMBED, HIDDEN, STEPS, LSTM_BATCH = 76, 64, 128, 50, 32
SEQ_LATENCY_CALLS = 1000
# the GPT: models/char-gpt.flux's, read from its model line (gpt_config): vocabulary
# GPT_V, width D, LAYERS blocks of HEADS heads, context CONTEXT; a sequence model as
# the LSTM: (T, training batch, inference batch, output's key per step)


def gpt_config(path=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", "char-gpt.flux")):
    """(vocabulary, width, layers, heads, context, dropout) of the GPT(...) in a model
    file: the peer's GPT is the one cflux runs."""
    import re
    text = open(path).read()
    m = re.search(r"GPT\(\s*(\d+)\s*,\s*(\d+)\s*,\s*layers\s*=\s*(\d+)\s*,\s*heads\s*=\s*(\d+)\s*,"
                  r"\s*context\s*=\s*(\d+)\s*(?:,\s*drop\s*=\s*([0-9.]+)\s*)?\)", text)
    if not m:
        sys.exit("peers.py: %s: no GPT(vocab, d, layers = L, heads = H, context = T[, drop = p]) in it" % path)
    return tuple(int(g) for g in m.groups()[:5]) + (float(m.group(6) or 0),)


GPT_V, D, LAYERS, HEADS, CONTEXT, DROPOUT = gpt_config()
SEQ = {"lstm": (STEPS, LSTM_BATCH, INFER_BATCH, "chars_per_sec"),
       "gpt": (CONTEXT, 32, 100, "tokens_per_sec")}
WARMUP_S, LATENCY_CALLS = 0.5, 10000


def rate(step, sync, seconds, chunk):
    """Calls step(i) in chunks of `chunk`, then sync(), for a warm-up and then for
    `seconds`; returns the calls per second of the timed part and their count."""
    def run(limit):
        n, t0 = 0, time.perf_counter()
        while True:
            for _ in range(chunk):
                step(n)
                n += 1
            sync()
            t = time.perf_counter() - t0
            if t >= limit:
                return n / t, n
    run(min(WARMUP_S, seconds))
    return run(seconds)


def latency(call, seconds, calls=LATENCY_CALLS):
    """Median microseconds of call(i), which returns once its result is ready, over at
    least `calls` calls and at least `seconds`, after calls / 10 warm-up calls."""
    for i in range(calls // 10):
        call(i)
    clock, times = time.perf_counter_ns, []
    end = clock() + int(seconds * 1e9)
    i = 0
    while i < calls or clock() < end:
        t0 = clock()
        call(i)
        times.append(clock() - t0)
        i += 1
    return statistics.median(times) / 1000.0, i


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def torch_resnet():
    import torch
    nn, F = torch.nn, torch.nn.functional

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
            return F.relu(y + (x if self.downsample is None else self.downsample(x)))

    layers, cin = [nn.Conv2d(1, RESNET_WIDTHS[0], 3, 1, 1, bias=False), nn.BatchNorm2d(RESNET_WIDTHS[0]), nn.ReLU()], RESNET_WIDTHS[0]
    for stage, width in enumerate(RESNET_WIDTHS):
        for block in range(RESNET_BLOCKS):
            layers.append(BasicBlock(cin, width, 2 if stage > 0 and block == 0 else 1))
            cin = width
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, CLASSES)]
    return nn.Sequential(*layers)


def torch_model(name):
    import torch
    nn = torch.nn
    if name == "resnet":
        return torch_resnet()
    if name == "cnn":
        return nn.Sequential(nn.Conv2d(1, 8, 5), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(8, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(256, CLASSES))
    layers = []
    for i in range(3):
        layers.append(nn.Linear(SIZES[i], SIZES[i + 1]))
        if i < 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def torch_char_rnn():
    """Embedding, LSTM, Linear: (B, T) indices -> (B, T, V) logits."""
    import torch
    nn = torch.nn

    class CharRNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(V, EMBED)
            self.lstm = nn.LSTM(EMBED, HIDDEN, batch_first=True)
            self.out = nn.Linear(HIDDEN, V)

        def forward(self, x):
            h, _ = self.lstm(self.embed(x))
            return self.out(h)

    return CharRNN()


def torch_char_gpt():
    """A GPT-2-style character model: (B, T) indices -> (B, T, V) logits."""
    import torch
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
            self.qkv, self.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
            self.fc, self.fc2 = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)
            self.drop = nn.Dropout(DROPOUT)

        def attn(self, x):
            b, t, _ = x.shape
            q, k, v = (z.view(b, t, HEADS, D // HEADS).transpose(1, 2) for z in self.qkv(x).split(D, dim=2))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=DROPOUT if self.training else 0.0)
            return self.proj(y.transpose(1, 2).reshape(b, t, D))

        def forward(self, x):
            x = x + self.drop(self.attn(self.ln1(x)))
            return x + self.drop(self.fc2(F.gelu(self.fc(self.ln2(x)), approximate="tanh")))

    class CharGPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(GPT_V, D)
            self.pos = nn.Parameter(torch.zeros(CONTEXT, D))
            self.drop = nn.Dropout(DROPOUT)
            self.blocks = nn.Sequential(*(Block() for _ in range(LAYERS)))
            self.ln_f = nn.LayerNorm(D)
            self.head = nn.Linear(D, GPT_V)

        def forward(self, idx):
            x = self.drop(self.tok(idx) + self.pos[:idx.shape[1]])
            return self.head(self.ln_f(self.blocks(x)))

    return CharGPT()


def torch_train(model, data, labels, seconds, chunk, classes=None):
    """SGD steps of softmax cross-entropy on batches cycled from a pool (data[i % POOL],
    copied in as a data loader would hand them over), for `seconds`; returns steps/s,
    the steps timed and the last loss. With `classes`, the outputs (..., classes) and
    labels (...) are flattened: a classifier at every step of a sequence."""
    import torch
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    x, y = torch.empty_like(data[0]), torch.empty_like(labels[0])
    last = {}

    def step(i):
        x.copy_(data[i % POOL])
        y.copy_(labels[i % POOL])
        opt.zero_grad()
        z = model(x)
        if classes:
            loss = torch.nn.functional.cross_entropy(z.reshape(-1, classes), y.reshape(-1))
        else:
            loss = torch.nn.functional.cross_entropy(z, y)
        loss.backward()
        opt.step()
        last["loss"] = loss

    per_s, n = rate(step, lambda: None, seconds, chunk)
    return per_s, n, last["loss"].item()


def torch_gpt_generate(threads, seconds):
    """Characters/s of the GPT generating one at a time at batch 1 with its own cache of
    keys and values (past_key_values-style incremental decoding: each step runs one
    position, writes its keys and values into preallocated buffers and attends over
    the positions so far with scaled_dot_product_attention), drawing each character
    with torch.multinomial and feeding it back; when the window of CONTEXT fills, it
    goes on from its last quarter, read again in one forward, as cflux sample and cflux
    bench do. The steps, and a quarter read at once then steps, are checked against the
    whole window's forward first."""
    import torch
    F = torch.nn.functional
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    model = torch_char_gpt().eval()
    T, dh = CONTEXT, D // HEADS
    kc = [torch.zeros(1, HEADS, T, dh) for _ in model.blocks]
    vc = [torch.zeros(1, HEADS, T, dh) for _ in model.blocks]

    def step(tok, t):
        x = model.tok(tok.view(1, 1)) + model.pos[t]
        for i, blk in enumerate(model.blocks):
            q, k, v = (z.view(1, 1, HEADS, dh).transpose(1, 2) for z in blk.qkv(blk.ln1(x)).split(D, dim=2))
            kc[i][:, :, t] = k[:, :, 0]
            vc[i][:, :, t] = v[:, :, 0]
            y = F.scaled_dot_product_attention(q, kc[i][:, :, :t + 1], vc[i][:, :, :t + 1])
            x = x + blk.proj(y.transpose(1, 2).reshape(1, 1, D))
            x = x + blk.fc2(F.gelu(blk.fc(blk.ln2(x)), approximate="tanh"))
        return torch.softmax(model.head(model.ln_f(x))[0, 0], dim=-1)

    def prefill(toks):
        """The positions 0 .. n - 1 at once into the emptied cache (causal among them)."""
        n = len(toks)
        x = model.tok(torch.stack(toks).view(1, n)) + model.pos[:n]
        for i, blk in enumerate(model.blocks):
            q, k, v = (z.view(1, n, HEADS, dh).transpose(1, 2) for z in blk.qkv(blk.ln1(x)).split(D, dim=2))
            kc[i][:, :, :n] = k
            vc[i][:, :, :n] = v
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + blk.proj(y.transpose(1, 2).reshape(1, n, D))
            x = x + blk.fc2(F.gelu(blk.fc(blk.ln2(x)), approximate="tanh"))

    with torch.inference_mode():
        seq = torch.randint(0, GPT_V, (T,))
        whole = torch.softmax(model(seq.view(1, T))[0], dim=-1)
        worst = max(float((step(seq[t], t) - whole[t]).abs().max()) for t in range(T))
        prefill(list(seq[:T // 4]))
        worst = max(worst, max(float((step(seq[t], t) - whole[t]).abs().max()) for t in range(T // 4, T)))
        assert worst < 1e-4, "the cached steps differ from the window's forward by %g" % worst
        gen = torch.Generator().manual_seed(1)
        window, chars, nxt = [], 0, torch.tensor(0)

        def one():
            nonlocal window, nxt
            if len(window) == T:
                window = window[T - T // 4:]
                prefill(window)
            window.append(nxt)
            p = step(nxt, len(window) - 1)
            nxt = torch.multinomial(p, 1, generator=gen)[0]

        t0 = time.perf_counter()
        while time.perf_counter() - t0 < WARMUP_S:
            one()
        t0, chars = time.perf_counter(), 0
        while True:
            one()
            chars += 1
            t = time.perf_counter() - t0
            if t >= seconds and chars >= 2 * T:
                break
    return {"version": torch.__version__, "batch": 1, "chars_per_sec": chars / t, "chars": chars, "check": worst}


def run_torch_seq(name, case, threads, seconds):
    """A sequence model (SEQ): the LSTM or the GPT, on sequences of random indices."""
    import torch
    if case == "generate":
        return torch_gpt_generate(threads, seconds)
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    steps, batch, infer_batch, per_step = SEQ[name]
    model = torch_char_rnn() if name == "lstm" else torch_char_gpt()
    out = {"version": torch.__version__, "seq_len": steps,
           "params": sum(p.numel() for p in model.parameters())}
    if case == "train":
        vocab = V if name == "lstm" else GPT_V
        data = torch.randint(0, vocab, (POOL, batch, steps))
        labels = torch.randint(0, vocab, (POOL, batch, steps))
        per_s, n, loss = torch_train(model, data, labels, seconds, 5 if name == "lstm" else 1, classes=vocab)
        out.update(batch=batch, samples_per_sec=per_s * batch, steps=n, peak_rss_mb=peak_rss_mb(), loss=loss)
        out[per_step] = per_s * batch * steps
    elif case == "latency":
        model.eval()
        xs = torch.randint(0, V if name == "lstm" else GPT_V, (POOL, 1, steps))
        with torch.inference_mode():
            us, n = latency(lambda i: torch.softmax(model(xs[i % POOL]), dim=-1), seconds, SEQ_LATENCY_CALLS)
        out.update(batch=1, latency_us=us, calls=n)
    else:
        model.eval()
        xs = torch.randint(0, V if name == "lstm" else GPT_V, (INFER_POOL, infer_batch, steps))
        with torch.inference_mode():
            per_s, n = rate(lambda i: torch.softmax(model(xs[i % INFER_POOL]), dim=-1), lambda: None, seconds, 1)
        out.update(batch=infer_batch, samples_per_sec=per_s * infer_batch, batches=n)
        out[per_step] = per_s * infer_batch * steps
    return out


def run_torch(name, case, threads, seconds):
    import torch
    if name in SEQ:
        return run_torch_seq(name, case, threads, seconds)
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    model = torch_model(name)
    shape = SHAPE[name]
    out = {"version": torch.__version__}
    if case == "train":
        data = torch.rand(POOL, BATCH, *shape)
        labels = torch.randint(0, CLASSES, (POOL, BATCH))
        per_s, n, loss = torch_train(model, data, labels, seconds, 50)
        out.update(batch=BATCH, samples_per_sec=per_s * BATCH, steps=n, peak_rss_mb=peak_rss_mb(), loss=loss)
    elif case == "latency":
        model.eval()
        xs = torch.rand(POOL, 1, *shape)
        with torch.inference_mode():
            us, n = latency(lambda i: torch.softmax(model(xs[i % POOL]), dim=1), seconds)
        out.update(batch=1, latency_us=us, calls=n)
    else:
        model.eval()
        xs = torch.rand(INFER_POOL, INFER_BATCH, *shape)
        with torch.inference_mode():
            per_s, n = rate(lambda i: torch.softmax(model(xs[i % INFER_POOL]), dim=1), lambda: None, seconds, 10)
        out.update(batch=INFER_BATCH, samples_per_sec=per_s * INFER_BATCH, batches=n)
    return out


def int8_model(peer, name, threads):
    """The model of case `name`, quantized by PyTorch or by onnxruntime: a function of
    a float32 batch (a torch tensor) that returns the softmax probabilities."""
    import torch
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch_model(name), torch.nn.Softmax(dim=1)).eval()
    if peer == "torch-int8":
        q = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
        return lambda x: q(x)
    import tempfile
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic
    d = tempfile.mkdtemp()
    plain, quant = os.path.join(d, "m.onnx"), os.path.join(d, "q.onnx")
    torch.onnx.export(model, torch.rand(1, *SHAPE[name]), plain, input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}}, dynamo=False)
    quantize_dynamic(plain, quant, weight_type=QuantType.QInt8)
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    s = ort.InferenceSession(quant, so, providers=["CPUExecutionProvider"])
    return lambda x: s.run(None, {"x": x.numpy()})[0]


def run_int8(peer, name, case, threads, seconds):
    import torch
    f = int8_model(peer, name, threads)
    if peer == "torch-int8":
        out = {"version": torch.__version__, "quantized": "quantize_dynamic(nn.Linear, qint8)"}
    else:
        import onnxruntime as ort
        out = {"version": ort.__version__, "quantized": "onnxruntime.quantization.quantize_dynamic(QInt8)"}
    shape = SHAPE[name]
    if case == "latency":
        xs = torch.rand(POOL, 1, *shape)
        with torch.inference_mode():
            us, n = latency(lambda i: f(xs[i % POOL]), seconds)
        out.update(batch=1, latency_us=us, calls=n)
    else:
        xs = torch.rand(INFER_POOL, INFER_BATCH, *shape)
        with torch.inference_mode():
            per_s, n = rate(lambda i: f(xs[i % INFER_POOL]), lambda: None, seconds, 10)
        out.update(batch=INFER_BATCH, samples_per_sec=per_s * INFER_BATCH, batches=n)
    return out


def mxnet_symbol(name):
    """The model's symbol up to its logits, and its layers' names (each has a _weight
    and a _bias)."""
    import mxnet as mx
    h = mx.sym.Variable("data")
    if name == "cnn":
        for i, filters in enumerate((8, 16)):
            h = mx.sym.Convolution(h, kernel=(5, 5), num_filter=filters, name="conv%d" % (i + 1))
            h = mx.sym.Activation(h, act_type="relu")
            h = mx.sym.Pooling(h, kernel=(2, 2), stride=(2, 2), pool_type="max")
        h = mx.sym.FullyConnected(mx.sym.Flatten(h), num_hidden=CLASSES, name="fc1")
        return h, ["conv1", "conv2", "fc1"]
    for i in range(3):
        h = mx.sym.FullyConnected(h, num_hidden=SIZES[i + 1], name="fc%d" % (i + 1))
        if i < 2:
            h = mx.sym.Activation(h, act_type="relu")
    return h, ["fc1", "fc2", "fc3"]


def run_mxnet_lstm(case, seconds):
    """Gluon, the usual way to write an LSTM in MXNet 1.x: nn.Embedding, rnn.LSTM (the
    fused RNN operator; oneDNN's on CPU) and nn.Dense in a HybridSequential,
    hybridized with static memory, under autograd.record; the loss is
    SoftmaxCrossEntropyLoss (its per-sample value the mean over the T steps), and
    Trainer.step(B) applies SGD to the gradient of the mean over B x T."""
    import mxnet as mx
    import numpy as np
    from mxnet import autograd, gluon
    from mxnet.gluon import nn, rnn
    mx.random.seed(1)
    rng = np.random.default_rng(1)
    net = nn.HybridSequential()
    net.add(nn.Embedding(V, EMBED), rnn.LSTM(HIDDEN, layout="NTC", input_size=EMBED),
            nn.Dense(V, flatten=False, in_units=HIDDEN))
    net.initialize(mx.init.Uniform(HIDDEN ** -0.5), ctx=mx.cpu())
    net.hybridize(static_alloc=True, static_shape=True)
    out = {"version": mx.__version__, "seq_len": STEPS}
    if case == "train":
        batch = LSTM_BATCH
        xs = [mx.nd.array(rng.integers(0, V, (batch, STEPS)).astype(np.float32)) for _ in range(POOL)]
        ys = [mx.nd.array(rng.integers(0, V, (batch, STEPS)).astype(np.float32)) for _ in range(POOL)]
        lossf = gluon.loss.SoftmaxCrossEntropyLoss()
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": LR})
        last = {}

        def step(i):
            with autograd.record():
                loss = lossf(net(xs[i % POOL]), ys[i % POOL])
            loss.backward()
            trainer.step(batch)
            last["loss"] = loss

        per_s, n = rate(step, mx.nd.waitall, seconds, 5)
        out.update(batch=batch, samples_per_sec=per_s * batch, chars_per_sec=per_s * batch * STEPS, steps=n,
                   peak_rss_mb=peak_rss_mb(), loss=float(last["loss"].mean().asscalar()))
    elif case == "latency":
        xs = [mx.nd.array(rng.integers(0, V, (1, STEPS)).astype(np.float32)) for _ in range(POOL)]

        def call(i):
            mx.nd.softmax(net(xs[i % POOL]), axis=-1).wait_to_read()

        us, n = latency(call, seconds, SEQ_LATENCY_CALLS)
        out.update(batch=1, latency_us=us, calls=n)
    else:
        xs = [mx.nd.array(rng.integers(0, V, (INFER_BATCH, STEPS)).astype(np.float32)) for _ in range(INFER_POOL)]
        per_s, n = rate(lambda i: mx.nd.softmax(net(xs[i % INFER_POOL]), axis=-1), mx.nd.waitall, seconds, 1)
        out.update(batch=INFER_BATCH, samples_per_sec=per_s * INFER_BATCH,
                   chars_per_sec=per_s * INFER_BATCH * STEPS, batches=n)
    return out


def run_mxnet(name, case, threads, seconds):
    """The classic symbolic API: FullyConnected (and Convolution, Pooling)/Activation/
    SoftmaxOutput, an executor from simple_bind, forward/backward, and
    mx.nd.sgd_update on each parameter. The LSTM: run_mxnet_lstm."""
    if name == "lstm":
        return run_mxnet_lstm(case, seconds)
    import mxnet as mx
    import numpy as np
    mx.random.seed(1)
    rng = np.random.default_rng(1)
    h, layers = mxnet_symbol(name)
    # normalization='batch': the gradient of the mean loss over the batch, as PyTorch's
    sym = mx.sym.SoftmaxOutput(h, name="softmax", normalization="batch")
    params = ["%s_%s" % (l, k) for l in layers for k in ("weight", "bias")]
    batch = {"train": BATCH, "latency": 1, "infer": INFER_BATCH}[case]
    train = case == "train"
    shape = SHAPE[name]
    exe = sym.simple_bind(mx.cpu(), data=(batch,) + shape, softmax_label=(batch,),
                          grad_req={p: "write" for p in params} if train else "null")
    # PyTorch's Linear and Conv2d default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)), weight
    # and bias alike, fan_in = inputs x kernel area
    for l in layers:
        a = float(np.prod(exe.arg_dict[l + "_weight"].shape[1:])) ** -0.5
        for k in ("weight", "bias"):
            arr = exe.arg_dict["%s_%s" % (l, k)]
            arr[:] = rng.uniform(-a, a, arr.shape)
    x, y = exe.arg_dict["data"], exe.arg_dict["softmax_label"]
    out = {"version": mx.__version__}
    pool = POOL if case != "infer" else INFER_POOL
    xs = [mx.nd.array(rng.random((batch,) + shape, dtype=np.float32)) for _ in range(pool)]
    if train:
        ys = [mx.nd.array(rng.integers(0, CLASSES, batch).astype(np.float32)) for _ in range(pool)]
        pairs = [(exe.arg_dict[p], exe.grad_dict[p]) for p in params]

        def step(i):
            x[:] = xs[i % pool]
            y[:] = ys[i % pool]
            exe.forward(is_train=True)
            exe.backward()
            for w, g in pairs:
                mx.nd.sgd_update(w, g, lr=LR, out=w)

        per_s, n = rate(step, mx.nd.waitall, seconds, 50)
        p = exe.outputs[0].asnumpy()
        lab = y.asnumpy().astype(int)
        loss = float(-np.mean(np.log(p[np.arange(batch), lab])))
        out.update(batch=batch, samples_per_sec=per_s * batch, steps=n,
                   peak_rss_mb=peak_rss_mb(), loss=loss)
    else:
        def forward(i):
            x[:] = xs[i % pool]
            exe.forward(is_train=False)

        if case == "latency":
            def call(i):
                forward(i)
                exe.outputs[0].wait_to_read()
            us, n = latency(call, seconds)
            out.update(batch=1, latency_us=us, calls=n)
        else:
            per_s, n = rate(forward, mx.nd.waitall, seconds, 10)
            out.update(batch=batch, samples_per_sec=per_s * batch, batches=n)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("peer", choices=("torch", "mxnet", "torch-int8", "ort-int8"))
    ap.add_argument("case", choices=("train", "latency", "infer", "generate"))
    ap.add_argument("--model", choices=("mlp", "cnn", "lstm", "gpt", "resnet"), default="mlp")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=3.0)
    a = ap.parse_args()
    if a.case == "generate" and (a.peer != "torch" or a.model != "gpt"):
        ap.error("generate is the GPT's, against PyTorch")
    if a.peer == "mxnet" and a.model in ("gpt", "resnet"):
        ap.error("the %s case is PyTorch's only (run.sh skips MXNet there)" % a.model)
    int8 = a.peer.endswith("-int8")
    if int8 and (a.model not in ("mlp", "cnn") or a.case == "train"):
        ap.error("the int8 peers run inference (infer, latency) of the mlp and the cnn only")
    for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MXNET_CPU_WORKER_NTHREADS"):
        os.environ[v] = str(a.threads)
    if int8:
        res = run_int8(a.peer, a.model, a.case, a.threads, a.seconds)
    else:
        res = (run_torch if a.peer == "torch" else run_mxnet)(a.model, a.case, a.threads, a.seconds)
    line = {"peer": a.peer, "model": a.model, "case": a.case, "threads": a.threads, "seconds": a.seconds}
    line.update(res)
    sys.stdout.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
