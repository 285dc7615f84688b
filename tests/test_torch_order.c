/* test_torch_order.c - a PyTorch nn.Sequential of eleven Linear layers (modules 0, 2,
 * ..., 20, ReLUs between them) imported into the same chain in the notation: modules
 * numbered past 9 are taken in natural order ("2" before "10"), so that every weight
 * lands in its own layer, and export writes each back under its module's name. A
 * bytewise order ("10" before "2") fills layer 1 from module 10. */
#include <stdlib.h>
#include <string.h>

#include "cflux.h"
#include "core/safetensors.h"
#include "test.h"
#include "tmpdir.h"

#define LAYERS 11

/* module k's values: weight[r][c] = 100 k + 2 r + c (out r, in c); bias[r] = 100 k + 50 + r */
static float weight_at(int k, int r, int c) { return (float)(100 * k + 2 * r + c); }
static float bias_at(int k, int r) { return (float)(100 * k + 50 + r); }

TEST(eleven_linear_layers_each_in_its_own)
{
    /* Chain(Input(2), Affine(2), relu, ..., Affine(2)): the k-th Affine is item 2k + 1 */
    char src[512] = "model = Chain(Input(2)";
    for (int k = 0; k < LAYERS; k++) strcat(src, k ? ", relu, Affine(2)" : ", Affine(2)");
    strcat(src, ")\n");
    cf_model *m = cf_model_parse(src, "deep.flux");
    CHECK(m != NULL);
    if (!m) {
        fprintf(stderr, "%s\n", cf_last_error());
        return;
    }
    /* the file: Linear k as module "2k", written last to first */
    static float data[LAYERS][6];
    static char names[LAYERS][2][16];
    cf_st_tensor t[2 * LAYERS];
    for (int k = 0; k < LAYERS; k++) {
        for (int r = 0; r < 2; r++) {
            for (int c = 0; c < 2; c++) data[k][2 * r + c] = weight_at(k, r, c);
            data[k][4 + r] = bias_at(k, r);
        }
        snprintf(names[k][0], sizeof names[k][0], "%d.weight", 2 * k);
        snprintf(names[k][1], sizeof names[k][1], "%d.bias", 2 * k);
        int at = 2 * (LAYERS - 1 - k);
        t[at] = (cf_st_tensor){.name = names[k][0], .rank = 2, .shape = {2, 2}, .count = 4, .data = data[k]};
        t[at + 1] = (cf_st_tensor){.name = names[k][1], .rank = 1, .shape = {2}, .count = 2, .data = data[k] + 4};
    }
    CHECK(cf_st_write(tmp("deep.safetensors"), 2 * LAYERS, t, 0, NULL, NULL) == 0);
    int rc = cf_model_import_torch(m, tmp("deep.safetensors"), NULL, NULL);
    CHECK(rc == 0);
    if (rc) fprintf(stderr, "%s\n", cf_last_error());
    /* W (in, out) is weight transposed: W[c][r] = weight[r][c]; b (1, out) is bias */
    int misplaced = 0;
    for (int k = 0; !rc && k < LAYERS; k++) {
        char wn[16], bn[16];
        snprintf(wn, sizeof wn, "%d.W", 2 * k + 1);
        snprintf(bn, sizeof bn, "%d.b", 2 * k + 1);
        int wi = cf_model_param_index(m, wn), bi = cf_model_param_index(m, bn);
        CHECK(wi >= 0 && bi >= 0);
        if (wi < 0 || bi < 0) continue;
        const float *W = cf_model_param_data(m, wi), *b = cf_model_param_data(m, bi);
        int same = 1;
        for (int r = 0; r < 2; r++) {
            same &= b[r] == bias_at(k, r);
            for (int c = 0; c < 2; c++) same &= W[c * 2 + r] == weight_at(k, r, c);
        }
        if (!same)
            fprintf(stderr, "  layer %s holds %g (module %d's), not module %d's\n", wn, (double)b[0],
                    (int)(b[0] - 50) / 100 * 2, 2 * k);
        misplaced += !same;
    }
    CHECK(misplaced == 0);
    /* out again: each module's name holds its own values */
    CHECK(cf_model_export_torch(m, tmp("back.safetensors"), NULL) == 0);
    cf_st_file *back = cf_st_read(tmp("back.safetensors"));
    CHECK(back && cf_st_count(back) == 2 * LAYERS);
    for (int i = 0; back && i < 2 * LAYERS; i++) {
        const cf_st_tensor *y = cf_st_find(back, t[i].name);
        CHECK(y && y->count == t[i].count && !memcmp(y->data, t[i].data, t[i].count * sizeof *y->data));
    }
    cf_st_free(back);
    cf_model_free(m);
}

int main(void)
{
    if (tmpdir_make("torch-order")) return 1;
    RUN(eleven_linear_layers_each_in_its_own);
    tmpdir_remove();
    return test_summary("torch order");
}
