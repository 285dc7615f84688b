/* test_summary.c - cf_model_summary and cf_model_flops: the rows a model's source
 * gives, their shapes, parameters, FLOPs and activation bytes against counts made by
 * hand (the arithmetic beside each), the table and the JSON against each other, the
 * matrix products' counts against what the engine does (cf_gemm_flops over a
 * training step), the tree of cf_model_summary_ex's levels (each parent the sum of
 * what is under it), and clean errors. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdlib.h>

#include "cflux.h"
#include "test.h"

/* The summary as text (the table, or JSON) `depth` levels deep, or with depth 0
 * cf_model_summary's; NULL with the error. */
static char *summary_at(cf_model *m, int batch, int json, int depth)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    int rc = depth ? cf_model_summary_ex(m, batch, json, depth, f) : cf_model_summary(m, batch, json, f);
    fclose(f);
    if (rc) {
        free(buf);
        return NULL;
    }
    return buf;
}

static char *summary_of(cf_model *m, int batch, int json) { return summary_at(m, batch, json, 0); }

static cJSON *summary_json_at(cf_model *m, int batch, int depth)
{
    char *text = summary_at(m, batch, 1, depth);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    free(text);
    return j;
}

static cJSON *summary_json(cf_model *m, int batch) { return summary_json_at(m, batch, 0); }

static cJSON *row_at(cJSON *j, int i) { return cJSON_GetArrayItem(cJSON_GetObjectItem(j, "rows"), i); }
static int nrows(cJSON *j) { return cJSON_GetArraySize(cJSON_GetObjectItem(j, "rows")); }
static double num(cJSON *o, const char *key) { return cJSON_GetNumberValue(cJSON_GetObjectItem(o, key)); }
static const char *str(cJSON *o, const char *key)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(o, key));
    return s ? s : "(none)";
}

/* Row r's parameter k: name, count and kind. */
static cJSON *param_at(cJSON *r, int k) { return cJSON_GetArrayItem(cJSON_GetObjectItem(r, "params"), k); }
static const char *pname(cJSON *r, int k) { return str(param_at(r, k), "name"); }
static double pcount(cJSON *r, int k) { return num(param_at(r, k), "count"); }
static const char *pkind(cJSON *r, int k) { return str(param_at(r, k), "kind"); }

/* One row as counted by hand. */
typedef struct want {
    const char *name, *place, *output;
    double params, fwd, bwd, bytes;
} want;

static void check_rows(cJSON *j, const want *w, int n)
{
    CHECK(nrows(j) == n);
    for (int i = 0; i < n && i < nrows(j); i++) {
        cJSON *r = row_at(j, i);
        if (strcmp(str(r, "name"), w[i].name) != 0 || strcmp(str(r, "place"), w[i].place) != 0 ||
            strcmp(str(r, "output"), w[i].output) != 0)
            fprintf(stderr, "row %d: %s %s %s, want %s %s %s\n", i, str(r, "name"), str(r, "place"), str(r, "output"),
                    w[i].name, w[i].place, w[i].output);
        CHECK(strcmp(str(r, "name"), w[i].name) == 0);
        CHECK(strcmp(str(r, "place"), w[i].place) == 0);
        CHECK(strcmp(str(r, "output"), w[i].output) == 0);
        CHECK_NEAR(num(r, "param_count"), w[i].params, 0);
        CHECK_NEAR(num(r, "flops_forward"), w[i].fwd, 0);
        CHECK_NEAR(num(r, "flops_backward"), w[i].bwd, 0);
        CHECK_NEAR(num(r, "activation_bytes"), w[i].bytes, 0);
    }
}

/* models/mlp.flux: Chain(Input(784), Affine(128), relu, Affine(64), relu, Affine(10),
 * softmax). Per sample. A product x W (n, k) (k, m) is 2 k m forward; backward dW is
 * 2 k m and dx 2 k m, but the first layer's x is the model's input: no dx. An addition
 * of m elements is m forward and m backward for each of its two inputs (the product's
 * and the bias's gradients). relu 1 per element each way; softmax 5 forward, 4 back. */
static const want mlp_rows[] = {
    {"Input x", "models/mlp.flux:2:9", "(B, 784)", 0, 0, 0, 784 * 4},
    /* 2*784*128 + 128 = 200832; dW 2*784*128 + 128 + 128 = 200960; (128 + 128) floats */
    {"Affine", "models/mlp.flux:4:3", "(B, 128)", 100352 + 128, 200832, 200960, 1024},
    {"relu", "models/mlp.flux:4:16", "(B, 128)", 0, 128, 128, 512},
    /* 2*128*64 + 64 = 16448; dx and dW 2 * 16384 + 64 + 64 = 32896; (64 + 64) floats */
    {"Affine", "models/mlp.flux:5:3", "(B, 64)", 8192 + 64, 16448, 32896, 512},
    {"relu", "models/mlp.flux:5:15", "(B, 64)", 0, 64, 64, 256},
    /* 2*64*10 + 10 = 1290; 2 * 1280 + 10 + 10 = 2580; (10 + 10) floats */
    {"Affine", "models/mlp.flux:6:3", "(B, 10)", 640 + 10, 1290, 2580, 80},
    {"softmax", "models/mlp.flux:6:15", "(B, 10)", 0, 5 * 10, 4 * 10, 40},
};
/* 200832 + 128 + 16448 + 64 + 1290 + 50 */
#define MLP_FWD 218812.0
/* 200960 + 128 + 32896 + 64 + 2580 + 40 */
#define MLP_BWD 236668.0
/* 3136 + 1024 + 512 + 512 + 256 + 80 + 40 */
#define MLP_BYTES 5560.0

TEST(mlp_by_hand)
{
    cf_model *m = cf_model_load("models/mlp.flux");
    CHECK(m != NULL);
    cJSON *j = summary_json(m, 0);
    CHECK(j != NULL);
    if (!j) return;
    check_rows(j, mlp_rows, 7);
    cJSON *r = row_at(j, 1);
    CHECK(strcmp(pname(r, 0), "1.W") == 0 && pcount(r, 0) == 100352 && strcmp(pkind(r, 0), "trained") == 0);
    CHECK(strcmp(pname(r, 1), "1.b") == 0 && pcount(r, 1) == 128);
    CHECK(strcmp(pname(row_at(j, 3), 0), "3.W") == 0 && pcount(row_at(j, 3), 0) == 8192);
    CHECK(strcmp(pname(row_at(j, 5), 1), "5.b") == 0 && pcount(row_at(j, 5), 1) == 10);
    CHECK(num(row_at(j, 1), "line") == 4 && num(row_at(j, 1), "col") == 3);
    cJSON *t = cJSON_GetObjectItem(j, "totals");
    CHECK_NEAR(num(t, "trained"), 109386, 0);   /* 100352 + 128 + 8192 + 64 + 640 + 10 */
    CHECK_NEAR(num(t, "statistics"), 0, 0);
    CHECK_NEAR(num(t, "weight_bytes"), 4 * 109386, 0);
    CHECK_NEAR(num(t, "flops_forward"), MLP_FWD, 0);
    CHECK_NEAR(num(t, "flops_backward"), MLP_BWD, 0);
    CHECK_NEAR(num(t, "activation_bytes"), MLP_BYTES, 0);
    CHECK(cJSON_GetObjectItem(t, "activation_bytes_batch") == NULL);
    double f = 0, b = 0;
    CHECK(cf_model_flops(m, &f, &b) == 0);
    CHECK_NEAR(f, MLP_FWD, 0);
    CHECK_NEAR(b, MLP_BWD, 0);
    CHECK(cf_model_param_data(m, 0) == NULL);   /* nothing allocated for the weights */
    cJSON_Delete(j);
    cf_model_free(m);
}

/* --batch N: N for B in the shapes, and the activations of a batch of N. */
TEST(mlp_batch)
{
    cf_model *m = cf_model_load("models/mlp.flux");
    cJSON *j = summary_json(m, 32);
    CHECK(j != NULL);
    if (!j) return;
    CHECK(strcmp(str(row_at(j, 0), "output"), "(32, 784)") == 0);
    cJSON *sh = cJSON_GetObjectItem(row_at(j, 1), "output_shape");
    CHECK(cJSON_GetArraySize(sh) == 2 && num(row_at(j, 1), "calls") == 1);
    CHECK(cJSON_GetArrayItem(sh, 0)->valuedouble == 32 && cJSON_GetArrayItem(sh, 1)->valuedouble == 128);
    cJSON *t = cJSON_GetObjectItem(j, "totals");
    CHECK_NEAR(num(t, "activation_bytes_batch"), 32 * MLP_BYTES, 0);
    CHECK_NEAR(num(t, "flops_forward"), MLP_FWD, 0);   /* still per sample */
    CHECK_NEAR(num(j, "batch"), 32, 0);
    cJSON_Delete(j);
    j = summary_json(m, 0);
    sh = cJSON_GetObjectItem(row_at(j, 1), "output_shape");
    CHECK(cJSON_GetArrayItem(sh, 0)->valuedouble == -1);   /* B */
    cJSON_Delete(j);
    char *text = summary_of(m, 32, 0);
    CHECK_HAS(text, "(32, 128)");
    CHECK_HAS(text, "at batch 32: 173.8 KB");          /* 32 * 5560 = 177920 bytes */
    free(text);
    cf_model_free(m);
}

/* "200.8K" -> 200800: what the table shows of a count. */
static double unshort(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    const char *units = "KMGTPE", *u = *end ? strchr(units, *end) : NULL;
    for (const char *p = units; u && p <= u; p++) v *= 1000;
    return v;
}

/* "1.0 KB" -> 1024 */
static double unbytes(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    while (*end == ' ') end++;
    const char *units = "KMGTPE", *u = *end && *end != 'B' ? strchr(units, *end) : NULL;
    for (const char *p = units; u && p <= u; p++) v *= 1024;
    return v;
}

/* The table's cells: runs of two or more blanks part them. */
static int cells(const char *text, char out[8][128])
{
    char buf[512];
    snprintf(buf, sizeof buf, "%.*s", (int)strcspn(text, "\n"), text);
    const char *line = buf;
    int n = 0;
    while (*line == ' ') line++;
    while (*line && n < 8) {
        const char *e = strstr(line, "  ");
        size_t len = e ? (size_t)(e - line) : strlen(line);
        if (len > 127) len = 127;
        memcpy(out[n], line, len);
        out[n++][len] = 0;
        if (!e) break;
        line = e;
        while (*line == ' ') line++;
    }
    return n;
}

/* A place as the table shows it: as it is, or, in a table too wide for the model's own
 * file to be named in full, with only the file's base name ("char-gpt.flux:9:26"). */
static int same_place(const char *shown, const char *place)
{
    size_t n = strlen(shown), len = strlen(place);
    return strcmp(shown, place) == 0 || (len > n && place[len - n - 1] == '/' && strcmp(place + len - n, shown) == 0);
}

/* The table holds what the JSON holds: each row's name (indented 2 a level below the
 * top), place, output and parameters exactly, its FLOPs and bytes to the digits shown;
 * the totals likewise. depth as summary_at's. */
static void table_agrees(cf_model *m, int batch, int depth)
{
    char *text = summary_at(m, batch, 0, depth);
    cJSON *j = summary_json_at(m, batch, depth);
    CHECK(text && j);
    if (!text || !j) {
        free(text);
        cJSON_Delete(j);
        return;
    }
    int r = 0;
    char c[8][128];
    const char *line = strstr(text, "\n==");
    line = line ? strchr(line + 1, '\n') : NULL;
    for (; line && *++line && *line != '-'; line = strchr(line, '\n')) {
        int n = cells(line, c);
        if (n == 1) continue;   /* a row's parameters: their items part by ", " */
        cJSON *o = row_at(j, r++);
        CHECK(n == 7 && o);
        if (n != 7 || !o) break;
        CHECK((int)strspn(line, " ") == 2 * ((int)num(o, "depth") - 1));
        char out[128];
        if (num(o, "calls") > 1) snprintf(out, sizeof out, "%s ×%.0f", str(o, "output"), num(o, "calls"));
        else snprintf(out, sizeof out, "%s", str(o, "output"));
        CHECK(strcmp(c[0], str(o, "name")) == 0);
        CHECK(same_place(c[1], str(o, "place")));
        CHECK(strcmp(c[2], out) == 0);
        CHECK_NEAR(atof(c[3]), num(o, "param_count"), 0);
        CHECK_NEAR(unshort(c[4]), num(o, "flops_forward"), 5e-4 * num(o, "flops_forward"));
        CHECK_NEAR(unshort(c[5]), num(o, "flops_backward"), 5e-4 * num(o, "flops_backward"));
        CHECK_NEAR(unbytes(c[6]), num(o, "activation_bytes"), 0.05 * num(o, "activation_bytes"));
        /* the parameters, on the line below */
        cJSON *ps = cJSON_GetObjectItem(o, "params");
        for (int k = 0; k < cJSON_GetArraySize(ps); k++) {
            char item[160];
            snprintf(item, sizeof item, "%s %.0f", pname(o, k), pcount(o, k));
            CHECK_HAS(strchr(line, '\n'), item);
        }
    }
    CHECK(r == nrows(j));
    cJSON *t = cJSON_GetObjectItem(j, "totals");
    char want[160];
    snprintf(want, sizeof want, "Parameters: %.0f trained", num(t, "trained"));
    CHECK_HAS(text, want);
    const char *fl = strstr(text, "FLOPs a sample: ");
    CHECK(fl != NULL);
    if (fl) {
        double f = unshort(fl + 16), b = unshort(strstr(fl, "forward, ") + 9);
        CHECK_NEAR(f, num(t, "flops_forward"), 5e-4 * num(t, "flops_forward"));
        CHECK_NEAR(b, num(t, "flops_backward"), 5e-4 * num(t, "flops_backward"));
    }
    free(text);
    cJSON_Delete(j);
}

TEST(table_agrees_with_json)
{
    const char *files[] = {"models/mlp.flux",     "models/cnn-bn.flux", "models/char-rnn.flux",
                           "models/char-gru.flux", "models/tlp.flux",    "models/cnn.flux",
                           "models/char-gpt.flux", "tests/models/good/nested_templates.flux"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        cf_model *m = cf_model_load(files[i]);
        CHECK(m != NULL);
        if (!m) continue;
        table_agrees(m, 0, 0);
        table_agrees(m, 16, 0);
        table_agrees(m, 0, 4);
        cf_model_free(m);
    }
}

/* models/cnn.flux: Conv2D(8, 5), relu, MaxPool(2), Conv2D(16, 5), relu, MaxPool(2),
 * flatten, Affine(10), softmax on (1, 28, 28). A convolution's output element is
 * C KH KW multiply-adds: 2 E C KH KW. */
TEST(cnn_by_hand)
{
    cf_model *m = cf_model_load("models/cnn.flux");
    cJSON *j = summary_json(m, 0);
    CHECK(j != NULL);
    if (!j) return;
    CHECK(nrows(j) == 10);   /* Input and the chain's nine items */
    /* conv 1: E = 8*24*24 = 4608 outputs of 1*5*5: 2*4608*25 = 230400, the bias 4608;
       backward dK 230400 (x is the input: no dx), the addition 2 * 4608 */
    cJSON *r = row_at(j, 1);
    CHECK(strcmp(str(r, "name"), "Conv2D") == 0 && strcmp(str(r, "output"), "(B, 8, 24, 24)") == 0);
    CHECK_NEAR(num(r, "flops_forward"), 230400 + 4608, 0);
    CHECK_NEAR(num(r, "flops_backward"), 230400 + 2 * 4608, 0);
    CHECK_NEAR(num(r, "param_count"), 8 * 25 + 8, 0);
    /* max pooling 2x2: 4 comparisons per output, 8*12*12 = 1152 outputs; back 1 each */
    r = row_at(j, 3);
    CHECK(strcmp(str(r, "name"), "MaxPool") == 0);
    CHECK_NEAR(num(r, "flops_forward"), 4 * 1152, 0);
    CHECK_NEAR(num(r, "flops_backward"), 1152, 0);
    /* conv 2: E = 16*8*8 = 1024 outputs of 8*5*5 = 200: 2*1024*200 = 409600, + 1024;
       backward dx and dK 2 * 409600, the addition 2 * 1024 */
    r = row_at(j, 4);
    CHECK(strcmp(str(r, "place"), "models/cnn.flux:6:3") == 0);
    CHECK_NEAR(num(r, "flops_forward"), 409600 + 1024, 0);
    CHECK_NEAR(num(r, "flops_backward"), 2 * 409600 + 2 * 1024, 0);
    CHECK_NEAR(num(r, "activation_bytes"), 2 * 1024 * 4, 0);   /* the convolution and the sum */
    CHECK(strcmp(str(row_at(j, 7), "name"), "flatten") == 0 && num(row_at(j, 7), "flops_forward") == 0);
    cJSON_Delete(j);
    cf_model_free(m);
}

/* models/cnn-bn.flux: BatchNorm's running mean and variance are statistics, listed as
 * such and not trained; 6 FLOPs an element forward, 5 + 4 backward (dx wanted). */
TEST(batchnorm_statistics)
{
    cf_model *m = cf_model_load("models/cnn-bn.flux");
    cJSON *j = summary_json(m, 0);
    CHECK(j != NULL);
    if (!j) return;
    cJSON *r = row_at(j, 2);
    CHECK(strcmp(str(r, "name"), "BatchNorm") == 0 && strcmp(str(r, "place"), "models/cnn-bn.flux:6:27") == 0);
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(r, "params")) == 4);
    CHECK(strcmp(pname(r, 0), "2.γ") == 0 && strcmp(pkind(r, 0), "trained") == 0);
    CHECK(strcmp(pname(r, 2), "2.mean") == 0 && strcmp(pkind(r, 2), "statistic") == 0 && pcount(r, 2) == 32);
    CHECK(strcmp(pname(r, 3), "2.var") == 0 && strcmp(pkind(r, 3), "statistic") == 0);
    CHECK_NEAR(num(r, "flops_forward"), 6.0 * 32 * 28 * 28, 0);
    CHECK_NEAR(num(r, "flops_backward"), 9.0 * 32 * 28 * 28, 0);
    cJSON *t = cJSON_GetObjectItem(j, "totals");
    CHECK_NEAR(num(t, "statistics"), 2 * (32 + 64 + 128), 0);
    CHECK_NEAR(num(t, "trained"), (double)cf_model_weight_count(m), 0);
    cJSON_Delete(j);
    char *text = summary_of(m, 0, 0);
    CHECK_HAS(text, "2.γ 32, 2.β 32; statistics (not trained): 2.mean 32, 2.var 32");
    CHECK_HAS(text, "; 448 running statistics (not trained)");
    free(text);
    cf_model_free(m);
}

/* models/char-rnn.flux: unroll(Chain(Input(), Embedding(76, 64), LSTM(128), Affine(76),
 * softmax), 50), fused into one LSTM node over the sequence with the Embedding folded
 * in: I = 64, H = 128, T = 50, G = 4H = 512. */
TEST(lstm_rows)
{
    cf_model *m = cf_model_load("models/char-rnn.flux");
    cJSON *j = summary_json(m, 0);
    CHECK(j != NULL);
    if (!j) return;
    CHECK(nrows(j) == 5);   /* Input x, the Input's reshape, Embedding+LSTM, Affine, softmax */
    cJSON *r = row_at(j, 2);
    CHECK(strcmp(str(r, "name"), "Embedding+LSTM") == 0);
    CHECK(strcmp(str(r, "place"), "models/char-rnn.flux:8:50") == 0);
    CHECK(strcmp(str(r, "output"), "(B, 50, 128)") == 0);
    CHECK(strcmp(pname(r, 0), "1.E") == 0 && pcount(r, 0) == 76 * 64);
    CHECK(strcmp(pname(r, 1), "2.W") == 0 && pcount(r, 1) == 64 * 512);
    CHECK(strcmp(pname(r, 2), "2.U") == 0 && pcount(r, 2) == 128 * 512);
    CHECK(strcmp(pname(r, 3), "2.b") == 0 && pcount(r, 3) == 512);
    /* forward: 2TIG 3276800 + TG 25600 + 2THG 6553600 + 9TH 57600 */
    CHECK_NEAR(num(r, "flops_forward"), 3276800 + 25600 + 6553600 + 57600, 0);
    /* backward: cells 24TH 153600, dh 2(T-1)HG 6422528, dU 6553600, db 25600, dW
       3276800, the input's 2TIG 3276800 and its rows into E, TI 3200 */
    CHECK_NEAR(num(r, "flops_backward"), 153600 + 6422528 + 6553600 + 25600 + 3276800 + 3276800 + 3200, 0);
    r = row_at(j, 3);
    CHECK(strcmp(str(r, "name"), "Affine") == 0 && strcmp(str(r, "output"), "(B, 50, 76)") == 0);
    CHECK_NEAR(num(r, "flops_forward"), 2.0 * 50 * 128 * 76 + 50 * 76, 0);
    cJSON_Delete(j);
    cf_model_free(m);
}

/* models/char-gru.flux is not fused: its 50 steps repeat each layer, one row each. */
TEST(unrolled_steps)
{
    cf_model *m = cf_model_load("models/char-gru.flux");
    cJSON *j = summary_json(m, 0);
    CHECK(j != NULL);
    if (!j) return;
    int gru = -1;
    for (int i = 0; i < nrows(j); i++)
        if (strcmp(str(row_at(j, i), "name"), "GRU") == 0) gru = i;
    CHECK(gru > 0);
    cJSON *r = row_at(j, gru);
    CHECK(num(r, "calls") == 50);
    CHECK(strcmp(str(r, "output"), "(B, 128)") == 0);
    CHECK(strcmp(pname(r, 0), "2.W") == 0 && strcmp(pname(r, 3), "2.d") == 0);
    /* a step's two products: 2*64*384 + 2*128*384 = 147456, fifty of them */
    CHECK(num(r, "flops_forward") > 50 * 147456.0);
    CHECK_NEAR(num(cJSON_GetObjectItem(j, "totals"), "trained"), (double)cf_model_weight_count(m), 0);
    cJSON_Delete(j);
    char *text = summary_of(m, 0, 0);
    CHECK_HAS(text, "(B, 128) ×50");
    free(text);
    cf_model_free(m);
}

/* models/tlp.flux: a user's template taking models; its calls are the rows. */
TEST(template_of_models)
{
    cf_model *m = cf_model_load("models/tlp.flux");
    cJSON *j = summary_json(m, 0);
    CHECK(j != NULL);
    if (!j) return;
    static const want rows[] = {
        {"Input x", "models/tlp.flux:9:9", "(B, 10)", 0, 0, 0, 40},
        /* 2*10*20 + 20 = 420; dW 400, the addition 2 * 20 */
        {"Affine", "models/tlp.flux:4:12", "(B, 20)", 220, 420, 440, 160},
        {"sigmoid", "models/tlp.flux:4:10", "(B, 20)", 0, 20, 20, 80},
        /* 2*20*15 + 15 = 615; dx and dW 2 * 600, the addition 2 * 15 */
        {"Affine", "models/tlp.flux:5:13", "(B, 15)", 315, 615, 1230, 120},
        {"softmax", "models/tlp.flux:5:5", "(B, 15)", 0, 75, 60, 60},
    };
    check_rows(j, rows, 5);
    CHECK(strcmp(pname(row_at(j, 1), 0), "first.W") == 0 && strcmp(pname(row_at(j, 3), 1), "second.b") == 0);
    cJSON_Delete(j);
    cf_model_free(m);
}

/* A frozen parameter takes no gradient, and what lies before it none either: freezing
 * the first Affine leaves its row and relu without backward, and the second Affine
 * without dx. */
TEST(frozen_parameters)
{
    cf_model *m = cf_model_load("models/mlp.flux");
    CHECK(cf_model_set_grad_req(m, "1.W", CF_GRAD_NONE) == 0);
    CHECK(cf_model_set_grad_req(m, "1.b", CF_GRAD_NONE) == 0);
    cJSON *j = summary_json(m, 0);
    CHECK(j != NULL);
    if (!j) return;
    CHECK_NEAR(num(row_at(j, 1), "flops_backward"), 0, 0);
    CHECK_NEAR(num(row_at(j, 2), "flops_backward"), 0, 0);
    CHECK_NEAR(num(row_at(j, 3), "flops_backward"), 16384 + 64 + 64, 0);   /* dW and the addition */
    CHECK(strcmp(pkind(row_at(j, 1), 0), "frozen") == 0);
    cJSON *t = cJSON_GetObjectItem(j, "totals");
    CHECK_NEAR(num(t, "frozen"), 100352 + 128, 0);
    CHECK_NEAR(num(t, "trained"), 109386 - 100480, 0);
    cJSON_Delete(j);
    char *text = summary_of(m, 0, 0);
    CHECK_HAS(text, "1.W 100352 (frozen)");
    free(text);
    cf_model_free(m);
}

/* The summary describes the model, not its training: after the loss is added and the
 * model is bound for training (as cflux train has it when it prints the summary) it
 * is the same, the labels and the loss left out. */
TEST(same_when_training)
{
    cf_model *m = cf_model_load("models/cnn-bn.flux");
    char *before = summary_of(m, 64, 1);
    CHECK(cf_model_add_loss(m, CF_LOSS_XENT) == 0);
    cf_exec *e = cf_bind(m, 64, CF_TRAIN);
    CHECK(e != NULL);
    char *after = summary_of(m, 64, 1);
    CHECK(before && after && strcmp(before, after) == 0);
    free(before);
    free(after);
    cf_exec_free(e);
    cf_model_free(m);
}

/* A model built in C: a row per outermost scope, a node outside any is a row of its
 * own; a parameter read by two rows is listed with the first and counted once. */
TEST(c_model_and_shared_parameter)
{
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(4));
    cf_node *W = cf_param(m, "W", CF_SHAPE(4, 4), CF_GLOROT);
    cf_scope_begin(m, "first", NULL);
    cf_node *h = cf_matmul(m, x, W);
    cf_scope_end(m);
    h = cf_tanh(m, h);
    cf_scope_begin(m, "second", NULL);
    cf_node *y = cf_matmul(m, h, W);
    cf_scope_end(m);
    cf_output(m, y);
    cJSON *j = summary_json(m, 0);
    CHECK(j != NULL);
    if (!j) return;
    CHECK(nrows(j) == 4);   /* x, first, tanh, second */
    CHECK(strcmp(str(row_at(j, 1), "name"), "first") == 0 && strcmp(str(row_at(j, 3), "name"), "second") == 0);
    CHECK(strcmp(str(row_at(j, 2), "name"), "tanh") == 0);
    CHECK_NEAR(num(row_at(j, 1), "param_count"), 16, 0);
    CHECK_NEAR(num(row_at(j, 3), "param_count"), 0, 0);
    CHECK_NEAR(num(cJSON_GetObjectItem(j, "totals"), "trained"), 16, 0);
    /* second: 2*4*4 forward; dx and dW 2 * 32 backward. first: 32; dW only, 32 */
    CHECK_NEAR(num(row_at(j, 3), "flops_backward"), 64, 0);
    CHECK_NEAR(num(row_at(j, 1), "flops_backward"), 32, 0);
    cJSON_Delete(j);
    cf_model_free(m);
}

/* The products' FLOPs as counted above are what the engine does: cf_gemm_flops over a
 * forward and a backward at batch B is B times them. */
static double engine_products(const char *file, int batch)
{
    cf_model *m = cf_model_load(file);
    cf_exec *e = m ? cf_bind(m, batch, CF_TRAIN) : NULL;
    CHECK(e != NULL);
    if (!e) {
        fprintf(stderr, "%s\n", cf_last_error());
        cf_model_free(m);
        return -1;
    }
    size_t n;
    float *in = cf_exec_input(e, 0, &n), *head = cf_exec_output_grad(e, 0, &n);
    cf_exec_input(e, 0, &n);
    memset(in, 0, n * sizeof *in);   /* zeros: valid indices too */
    cf_exec_output_grad(e, 0, &n);
    for (size_t i = 0; i < n; i++) head[i] = 1;
    double before = cf_gemm_flops();
    CHECK(cf_forward(e, 1) == 0);
    CHECK(cf_backward(e) == 0);
    double done = cf_gemm_flops() - before;
    cf_exec_free(e);
    cf_model_free(m);
    return done;
}

TEST(engine_agrees)
{
    /* mlp: forward 2*(784*128 + 128*64 + 64*10) = 218368; backward the same but the
       first layer's dx: 218368 + 2*(128*64 + 64*10) = 236032 */
    CHECK_NEAR(engine_products("models/mlp.flux", 4), 4 * (218368.0 + 236032.0), 0);
    /* cnn: forward 230400 + 409600 + 2*256*10 = 645120; backward 230400 (dK) + 2 *
       409600 + 2 * 5120 = 1059840 */
    CHECK_NEAR(engine_products("models/cnn.flux", 2), 2 * (645120.0 + 1059840.0), 0);
    /* char-rnn at batch 1 (50 rows: fewer than the table's 76, so not folded): forward
       2TIG 3276800 + 2THG 6553600 + the Affine's 2*50*128*76 = 972800; backward dh
       6422528, dU 6553600, dW 3276800, the embedding's rows 3276800, the Affine's dx and
       dW 2 * 972800 */
    CHECK_NEAR(engine_products("models/char-rnn.flux", 1),
               3276800.0 + 6553600 + 972800 + 6422528 + 6553600 + 3276800 + 3276800 + 2 * 972800, 0);
}

/* A row's figures as the table shows them. */
static const char *const figures[] = {"param_count", "flops_forward", "flops_backward", "activation_bytes"};
enum { NFIG = 4 };

/* The rows of a summary of any depth are a tree, depth first: each row's parent is the
 * nearest row before it one level up. Each parent's figures are its children's sums,
 * and its params count theirs plus the parameters it lists itself; the top level's
 * rows add up to the totals. */
static void tree_adds_up(cJSON *j)
{
    int n = nrows(j);
    double(*under)[NFIG] = calloc((size_t)n + 1, sizeof *under);   /* children's sums; [n]: the top level's */
    int *kids = calloc((size_t)n + 1, sizeof *kids);
    CHECK(under && kids);
    for (int i = 0; i < n && under && kids; i++) {
        cJSON *r = row_at(j, i);
        int d = (int)num(r, "depth"), p = (int)num(r, "parent"), up = i - 1;
        while (up >= 0 && num(row_at(j, up), "depth") >= d) up--;
        CHECK(p == up && (up < 0 ? d == 1 : num(row_at(j, up), "depth") == d - 1));
        if (p != up) continue;
        int to = p < 0 ? n : p;
        for (int f = 0; f < NFIG; f++) under[to][f] += num(r, figures[f]);
        kids[to]++;
    }
    for (int i = 0; i < n && under && kids; i++) {
        cJSON *r = row_at(j, i);
        double own = 0;
        for (int k = 0; k < cJSON_GetArraySize(cJSON_GetObjectItem(r, "params")); k++) own += pcount(r, k);
        CHECK_NEAR(num(r, "param_count"), under[i][0] + own, 0);
        for (int f = 1; f < NFIG && kids[i]; f++) CHECK_NEAR(num(r, figures[f]), under[i][f], 1e-9 * under[i][f]);
    }
    cJSON *t = cJSON_GetObjectItem(j, "totals");
    for (int f = 1; f < NFIG && under; f++) CHECK_NEAR(under[n][f], num(t, figures[f]), 1e-9 * under[n][f]);
    if (under) CHECK(under[n][0] <= num(t, "trained") + num(t, "frozen") + num(t, "statistics"));
    free(under);
    free(kids);
}

/* The top-level rows of two summaries of one model at different depths: the same
 * rows with the same figures (only their lists of parameters may differ), and the
 * same totals. */
static void same_top_level(cJSON *a, cJSON *b)
{
    int n = 0;
    for (int i = 0, k = 0; i < nrows(a); i++, k++) {
        while (k < nrows(b) && num(row_at(b, k), "depth") > 1) k++;
        cJSON *x = row_at(a, i), *y = row_at(b, k);
        CHECK(x && y && num(x, "depth") == 1);
        if (!x || !y) return;
        CHECK(strcmp(str(x, "name"), str(y, "name")) == 0 && strcmp(str(x, "place"), str(y, "place")) == 0);
        CHECK(strcmp(str(x, "output"), str(y, "output")) == 0 && num(x, "calls") == num(y, "calls"));
        for (int f = 0; f < NFIG; f++) CHECK_NEAR(num(x, figures[f]), num(y, figures[f]), 0);
        n++;
    }
    for (int k = 0; k < nrows(b); k++) n -= num(row_at(b, k), "depth") == 1;
    CHECK(n == 0);
    CHECK(cJSON_Compare(cJSON_GetObjectItem(a, "totals"), cJSON_GetObjectItem(b, "totals"), 1));
}

/* Every model the project ships summarises, in both forms, and its rows add up to the
 * totals, at depth 1 and as a tree 4 levels deep. */
static void sums_add_up(const char *file)
{
    cf_model *m = cf_model_load(file);
    if (!m) return;   /* test_models checks which compile */
    cJSON *j = summary_json(m, 8), *deep = summary_json_at(m, 8, 4);
    CHECK(j && deep);
    if (!j || !deep) {
        fprintf(stderr, "%s: %s\n", file, cf_last_error());
        cJSON_Delete(j);
        cJSON_Delete(deep);
        cf_model_free(m);
        return;
    }
    tree_adds_up(j);
    tree_adds_up(deep);
    same_top_level(j, deep);
    char *text = summary_of(m, 0, 0);
    CHECK(text && strstr(text, "FLOPs a sample"));
    free(text);
    cJSON_Delete(j);
    cJSON_Delete(deep);
    cf_model_free(m);
}

TEST(every_model)
{
    const char *dirs[] = {"models", "tests/models/good"};
    for (int d = 0; d < 2; d++) {
        DIR *dir = opendir(dirs[d]);
        CHECK(dir != NULL);
        struct dirent *e;
        while (dir && (e = readdir(dir))) {
            size_t len = strlen(e->d_name);
            if (len < 6 || strcmp(e->d_name + len - 5, ".flux") != 0) continue;
            char path[512];
            snprintf(path, sizeof path, "%s/%s", dirs[d], e->d_name);
            sums_add_up(path);
        }
        if (dir) closedir(dir);
    }
}

/* The GPT of GPT_SRC below, Chain(Input(64), GPT(76, 128, layers = 4, heads = 4,
 * context = 64, drop = 0.25)), 3 levels deep: GPT (src/lang/stdlib/transformer.flux)
 * opens into its calls and its own ops, and repeat's Chain into its four
 * TransformerBlocks, made at one place and so one row ×4. T = 64, d = 128. */
static const struct {
    const char *name, *place;
    int depth, parent, calls;
} gpt_tree[] = {
    {"Input x", "gpt.flux:1:9", 1, -1, 1},
    {"GPT", "gpt.flux:1:26", 1, -1, 1},
    {"Embedding", "<stdlib>/transformer.flux:44:41", 2, 1, 1},
    {"+", "<stdlib>/transformer.flux:44:41", 2, 1, 1},   /* embed(x) + positions(P, x) */
    {"dropout", "<stdlib>/transformer.flux:44:33", 2, 1, 1},
    {"Chain", "<stdlib>/transformer.flux:44:26", 2, 1, 1},   /* repeat(TransformerBlock(...), layers) */
    {"TransformerBlock", "<stdlib>/transformer.flux:41:19", 3, 5, 4},
    {"LayerNorm", "<stdlib>/transformer.flux:44:21", 2, 1, 1},
    {"Affine", "<stdlib>/transformer.flux:44:16", 2, 1, 1},
    {"softmax", "<stdlib>/transformer.flux:44:8", 2, 1, 1},
};
/* A block's weights: two LayerNorms (γ, β) 2*128*2, qkv 128*384 + 384, out
   128*128 + 128, the MLP's up 128*512 + 512 and down 512*128 + 128 */
#define BLOCK_WEIGHTS (2.0 * 128 * 2 + 128 * 384 + 384 + 128 * 128 + 128 + 128 * 512 + 512 + 512 * 128 + 128)
/* A block forward, E = T d = 8192 elements of width d: layernorms 2 * 8E; qkv
   2*64*128*384 + 64*384; q's scale 4*64*32; q k^T 2*(4*64*64)*32; softmax 5*4*64*64;
   its dropout 4*64*64; a v 2*(4*64*32)*64; out 2*64*128*128 + E; two dropouts and
   two residual additions 4E; the MLP's up 2*64*128*512 + 4E, gelu 4E, down
   2*64*512*128 + E */
#define BLOCK_FWD                                                                                                     \
    (2 * 8 * 8192.0 + 2 * 64 * 128 * 384 + 64 * 384 + 4 * 64 * 32 + 2 * (4 * 64 * 64) * 32 + 5 * 4 * 64 * 64 +    \
     4 * 64 * 64 + 2 * (4 * 64 * 32) * 64 + 2 * 64 * 128 * 128 + 8192 + 4 * 8192 + 2 * 64 * 128 * 512 + 4 * 8192 +  \
     4 * 8192 + 2 * 64 * 512 * 128 + 8192)
/* Backward: every value carries a gradient (the embedding's table is trained), so
   each product computes both its inputs' (twice its forward), each bias and residual
   addition 2 a element, the scale, dropouts and gelu 1; layernorm 5 + 11, softmax 4 */
#define BLOCK_BWD                                                                                                     \
    (2 * 16 * 8192.0 + 2 * (2 * 64 * 128 * 384) + 2 * 64 * 384 + 4 * 64 * 32 + 2 * (2 * (4 * 64 * 64) * 32) +      \
     4 * 4 * 64 * 64 + 4 * 64 * 64 + 2 * (2 * (4 * 64 * 32) * 64) + 2 * (2 * 64 * 128 * 128) + 2 * 8192 +           \
     2 * 8192 + 2 * 2 * 8192 + 2 * (2 * 64 * 128 * 512) + 2 * 4 * 8192 + 4 * 8192 + 2 * (2 * 64 * 512 * 128) +      \
     2 * 8192)

/* The character GPT as models/char-gpt.flux had it for the GPL (a context of 64,
 * dropout 0.25): its dropouts are nodes the tree and the FLOPs count. */
#define GPT_SRC "model = Chain(Input(64), GPT(76, 128, layers = 4, heads = 4, context = 64, drop = 0.25))\n"

TEST(gpt_depth)
{
    cf_model *m = cf_model_parse(GPT_SRC, "gpt.flux");
    CHECK(m != NULL);
    cJSON *j = summary_json_at(m, 0, 3), *top = summary_json(m, 0);
    CHECK(j && top);
    if (!j || !top) return;
    int n = (int)(sizeof gpt_tree / sizeof *gpt_tree);
    CHECK(nrows(j) == n);
    for (int i = 0; i < n && i < nrows(j); i++) {
        cJSON *r = row_at(j, i);
        if (strcmp(str(r, "name"), gpt_tree[i].name) != 0 || strcmp(str(r, "place"), gpt_tree[i].place) != 0)
            fprintf(stderr, "row %d: %s %s, want %s %s\n", i, str(r, "name"), str(r, "place"), gpt_tree[i].name,
                    gpt_tree[i].place);
        CHECK(strcmp(str(r, "name"), gpt_tree[i].name) == 0 && strcmp(str(r, "place"), gpt_tree[i].place) == 0);
        CHECK(num(r, "depth") == gpt_tree[i].depth && num(r, "parent") == gpt_tree[i].parent);
        CHECK(num(r, "calls") == gpt_tree[i].calls);
    }
    tree_adds_up(j);
    same_top_level(top, j);
    /* GPT holds all the weights and lists only its own P (context, d); the blocks' row
       all four blocks' 12 parameters each */
    cJSON *gpt = row_at(j, 1), *chain = row_at(j, 5), *block = row_at(j, 6);
    CHECK_NEAR(num(gpt, "param_count"), 821068, 0);
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(gpt, "params")) == 1);
    CHECK(strcmp(pname(gpt, 0), "1.P") == 0 && pcount(gpt, 0) == 64 * 128);
    CHECK(strcmp(pname(row_at(j, 2), 0), "1.embed.E") == 0 && pcount(row_at(j, 2), 0) == 76 * 128);
    CHECK_NEAR(num(block, "param_count"), 4 * BLOCK_WEIGHTS, 0);
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(block, "params")) == 4 * 12);
    CHECK(strcmp(pname(block, 0), "1.blocks.0.norm1.γ") == 0);
    CHECK(strcmp(pname(block, 47), "1.blocks.3.mlp.down.b") == 0);
    CHECK_NEAR(num(block, "flops_forward"), 4 * BLOCK_FWD, 0);
    CHECK_NEAR(num(block, "flops_backward"), 4 * BLOCK_BWD, 0);
    CHECK(strcmp(str(block, "output"), "(B, 64, 128)") == 0);
    for (int f = 0; f < NFIG; f++) CHECK_NEAR(num(chain, figures[f]), num(block, figures[f]), 0);   /* its only child */
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(chain, "params")) == 0);
    /* depth 1: as cf_model_summary has it, GPT listing all 54 */
    CHECK(nrows(top) == 2 && num(row_at(top, 1), "depth") == 1 && num(row_at(top, 1), "parent") == -1);
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(row_at(top, 1), "params")) == 54);
    cJSON_Delete(j);
    cJSON_Delete(top);
    char *one = summary_of(m, 0, 0), *one_ex = summary_at(m, 0, 0, 1), *three = summary_at(m, 0, 0, 3);
    CHECK(one && one_ex && strcmp(one, one_ex) == 0);
    CHECK_HAS(three, "\n  Chain ");
    CHECK_HAS(three, "\n    TransformerBlock  ");
    CHECK_HAS(three, "(B, 64, 128) ×4  793088  ");
    CHECK_HAS(three, "\n    1.P 8192\n  Embedding ");        /* under GPT's name, as at depth 1 */
    CHECK_HAS(three, "\n      1.embed.E 9728\n");             /* under Embedding's, 2 further in */
    free(one);
    free(one_ex);
    free(three);
    /* past the deepest call, no more rows */
    char *five = summary_at(m, 0, 1, 5), *many = summary_at(m, 0, 1, 1000);
    CHECK(five && many && strcmp(five, many) == 0);
    free(five);
    free(many);
    cf_model_free(m);
}

/* A model built in C: nested scopes are levels too. Block's own W1 is listed with
 * Block, though the product that reads it has a row of its own below Block's. */
TEST(c_model_levels)
{
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(4));
    cf_scope_begin(m, "Block", "block");
    cf_node *W1 = cf_param(m, "W1", CF_SHAPE(4, 4), CF_GLOROT);
    cf_scope_begin(m, "Dense", "dense");
    cf_node *W2 = cf_param(m, "W2", CF_SHAPE(4, 4), CF_GLOROT);
    cf_node *h = cf_matmul(m, x, W2);
    cf_scope_end(m);
    cf_node *y = cf_matmul(m, cf_tanh(m, h), W1);
    cf_scope_end(m);
    cf_output(m, y);
    cJSON *j = summary_json_at(m, 0, 2);
    CHECK(j != NULL);
    if (!j) return;
    tree_adds_up(j);
    CHECK(nrows(j) == 5);   /* x, Block, and under it Dense, tanh, * */
    CHECK(strcmp(str(row_at(j, 1), "name"), "Block") == 0 && strcmp(str(row_at(j, 2), "name"), "Dense") == 0);
    CHECK(strcmp(str(row_at(j, 3), "name"), "tanh") == 0 && strcmp(str(row_at(j, 4), "name"), "*") == 0);
    CHECK(num(row_at(j, 4), "depth") == 2 && num(row_at(j, 4), "parent") == 1);
    CHECK(strcmp(pname(row_at(j, 1), 0), "block.W1") == 0 && strcmp(pname(row_at(j, 2), 0), "block.dense.W2") == 0);
    /* Dense: 2*4*4 forward, dW alone back (x is the input); tanh 4 and 4; the second
       product 32, and dx and dW back 64 */
    CHECK_NEAR(num(row_at(j, 1), "flops_forward"), 32 + 4 + 32, 0);
    CHECK_NEAR(num(row_at(j, 1), "flops_backward"), 32 + 4 + 64, 0);
    CHECK_NEAR(num(row_at(j, 1), "param_count"), 32, 0);
    cJSON_Delete(j);
    cf_model_free(m);
}

/* Grouped convolutions: each output element reads C/G input channels, not C. x (4, 6,
 * 6); conv1 K (8, 2, 3, 3), 2 groups, pad 1: (8, 6, 6), E = 288 outputs of 2*3*3 = 18
 * multiply-adds, 2*288*18 = 10368 forward, dK alone back (x is the input) 10368; conv2
 * K (4, 2, 3, 3), 4 groups of C = 8: (4, 4, 4), E = 64 of 18, 2*64*18 = 2304 forward,
 * dx and dK back 2 * 2304. (Counted over all C: 20736 and 9216 forward.) */
TEST(grouped_conv_by_hand)
{
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(4, 6, 6));
    cf_scope_begin(m, "conv1", NULL);
    cf_node *K1 = cf_param(m, "K1", CF_SHAPE(8, 2, 3, 3), CF_GLOROT);
    cf_node *h = cf_op_at(m, CF_OP_CONV2D, 2, (cf_node *const[]){x, K1}, (const int[]){1, 1, 1, 1, 1, 1, 2}, 7, NULL,
                          0, __FILE__, __LINE__, 0);
    cf_scope_end(m);
    cf_scope_begin(m, "conv2", NULL);
    cf_node *K2 = cf_param(m, "K2", CF_SHAPE(4, 2, 3, 3), CF_GLOROT);
    cf_node *y = cf_op_at(m, CF_OP_CONV2D, 2, (cf_node *const[]){h, K2}, (const int[]){1, 1, 0, 0, 1, 1, 4}, 7, NULL,
                          0, __FILE__, __LINE__, 0);
    cf_scope_end(m);
    cf_output(m, y);
    cJSON *j = summary_json(m, 0);
    CHECK(j != NULL);
    if (!j) return;
    CHECK(nrows(j) == 3);   /* x, conv1, conv2 */
    cJSON *r1 = row_at(j, 1), *r2 = row_at(j, 2);
    CHECK(strcmp(str(r1, "name"), "conv1") == 0 && strcmp(str(r1, "output"), "(B, 8, 6, 6)") == 0);
    CHECK(strcmp(str(r2, "name"), "conv2") == 0 && strcmp(str(r2, "output"), "(B, 4, 4, 4)") == 0);
    CHECK_NEAR(num(r1, "flops_forward"), 2 * 288 * 18, 0);
    CHECK_NEAR(num(r1, "flops_backward"), 2 * 288 * 18, 0);
    CHECK_NEAR(num(r2, "flops_forward"), 2 * 64 * 18, 0);
    CHECK_NEAR(num(r2, "flops_backward"), 2 * 2 * 64 * 18, 0);
    double f = 0, b = 0;
    CHECK(cf_model_flops(m, &f, &b) == 0);
    CHECK_NEAR(f, 10368 + 2304, 0);
    CHECK_NEAR(b, 10368 + 2 * 2304, 0);
    cJSON_Delete(j);
    cf_model_free(m);
}

/* A model too big to allocate is summarised all the same: nothing is allocated. */
TEST(big_model)
{
    cf_model *m = cf_model_parse("model = Chain(Input(784), Affine(3000000), softmax)", "big.flux");
    CHECK(m != NULL);
    CHECK(cf_set_memory_limit(64u << 20) == 0);
    double f = 0, b = 0;
    CHECK(cf_model_flops(m, &f, &b) == 0);
    CHECK_NEAR(f, 2.0 * 784 * 3000000 + 3000000 + 5.0 * 3000000, 0);
    char *text = summary_of(m, 0, 0);
    CHECK_HAS(text, "2355000000 trained");
    free(text);
    cf_set_memory_limit(0);
    cf_model_free(m);
}

TEST(errors)
{
    CHECK(cf_model_load("tests/models/bad/dim_affine_fractional.flux") == NULL);   /* does not compile */
    CHECK(cf_model_summary(NULL, 0, 0, stdout) == -1);
    CHECK_HAS(cf_last_error(), "no model");
    CHECK(cf_model_flops(NULL, NULL, NULL) == -1);
    cf_model *m = cf_model_load("models/mlp.flux");
    CHECK(cf_model_summary(m, 0, 0, NULL) == -1);
    CHECK_HAS(cf_last_error(), "no stream");
    CHECK(cf_model_summary(m, -1, 0, stdout) == -1);
    CHECK_HAS(cf_last_error(), "batch -1");
    CHECK(cf_model_summary_ex(m, 0, 0, 0, stdout) == -1);
    CHECK_HAS(cf_last_error(), "depth 0; it must be 1");
    CHECK(cf_model_summary_ex(m, 0, 1, -3, stdout) == -1);
    CHECK_HAS(cf_last_error(), "depth -3");
    CHECK(cf_model_summary_ex(NULL, 0, 0, 2, stdout) == -1);
    CHECK_HAS(cf_last_error(), "no model");
    cf_model_free(m);
    /* shapes that do not fit, in C: the shape error and the line that made it */
    m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(4));
    cf_node *W = cf_param(m, "W", CF_SHAPE(5, 3), CF_GLOROT);
    cf_output(m, cf_matmul(m, x, W));
    double f = 0, b = 0;
    CHECK(cf_model_flops(m, &f, &b) == -1);
    CHECK(summary_of(m, 0, 1) == NULL);
    CHECK_HAS(cf_last_error(), "matrix product shapes do not match: (B, 4) * (5, 3)");
    CHECK_HAS(cf_last_error(), "test_summary.c");
    cf_model_free(m);
}

int main(void)
{
    RUN(mlp_by_hand);
    RUN(mlp_batch);
    RUN(table_agrees_with_json);
    RUN(cnn_by_hand);
    RUN(grouped_conv_by_hand);
    RUN(batchnorm_statistics);
    RUN(lstm_rows);
    RUN(unrolled_steps);
    RUN(template_of_models);
    RUN(frozen_parameters);
    RUN(same_when_training);
    RUN(c_model_and_shared_parameter);
    RUN(gpt_depth);
    RUN(c_model_levels);
    RUN(engine_agrees);
    RUN(every_model);
    RUN(big_model);
    RUN(errors);
    return test_summary("summary");
}
