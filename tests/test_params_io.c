/* test_params_io.c - saving and loading parameters by name (safetensors). */
#include <stdlib.h>
#include <unistd.h>

#include "cflux.h"
#include "core/safetensors.h"
#include "test.h"
#include "tmpdir.h"

static cf_model *net(int hidden, int extra)
{
    cf_model *m = cf_model_new();
    cf_node *x = cf_input(m, "x", CF_SHAPE(4));
    cf_scope_begin(m, "Affine", "1");
    cf_node *W = cf_param(m, "W", CF_SHAPE(4, hidden), CF_GLOROT);
    cf_node *b = cf_param(m, "b", CF_SHAPE(1, hidden), CF_NORMAL(1));
    cf_scope_end(m);
    cf_node *h = cf_add(m, cf_matmul(m, x, W), b);
    if (extra) h = cf_mul(m, h, cf_param(m, "scale", CF_SHAPE(hidden), CF_ONES));
    cf_output(m, h);
    return m;
}

TEST(round_trip)
{
    cf_model *a = net(3, 0), *b = net(3, 0);
    cf_model_set_seed(b, 99);
    CHECK(cf_model_save_params(a, tmp("a.safetensors")) == 0);
    CHECK(cf_model_init_params(b) == 0);
    CHECK(memcmp(cf_model_param_data(a, 0), cf_model_param_data(b, 0), 12 * sizeof(float)) != 0);
    CHECK(cf_model_load_params(b, tmp("a.safetensors")) == 0);
    CHECK(strcmp(cf_last_error(), "") == 0);
    for (int p = 0; p < 2; p++) {
        size_t n = cf_shape_count(cf_model_param_shape(a, p));
        CHECK(memcmp(cf_model_param_data(a, p), cf_model_param_data(b, p), n * sizeof(float)) == 0);
    }
    /* what the file says about itself */
    cf_st_file *f = cf_st_read(tmp("a.safetensors"));
    CHECK(f && strcmp(cf_st_meta(f, "format"), "cflux-params") == 0);
    CHECK(f && strcmp(cf_st_meta(f, "format_version"), "1") == 0);
    CHECK(f && cf_st_find(f, "1.W") && cf_st_find(f, "1.W")->rank == 2);
    cf_st_free(f);
    cf_model_free(a);
    cf_model_free(b);
}

TEST(mismatches_are_reported_and_change_nothing)
{
    cf_model *a = net(3, 1), *b = net(3, 0), *c = net(5, 0);
    CHECK(cf_model_save_params(a, tmp("extra.safetensors")) == 0);
    CHECK(cf_model_save_params(b, tmp("plain.safetensors")) == 0);
    cf_model_init_params(c);
    float keep = cf_model_param_data(c, 0)[0];

    /* unexpected name */
    CHECK(cf_model_load_params(b, tmp("extra.safetensors")) != 0);
    CHECK_HAS(cf_last_error(), "extra.safetensors: the parameters do not match the model");
    CHECK_HAS(cf_last_error(), "not in the model (1): scale");
    /* missing name */
    CHECK(cf_model_load_params(a, tmp("plain.safetensors")) != 0);
    CHECK_HAS(cf_last_error(), "missing from the file (1): scale");
    /* shape: always an error, naming the parameter */
    CHECK(cf_model_load_params_ex(c, tmp("plain.safetensors"), CF_LOAD_PARTIAL) != 0);
    CHECK_HAS(cf_last_error(), "parameter '1.W' is (4, 5) in the model but (4, 3) in the file");
    CHECK(cf_model_param_data(c, 0)[0] == keep);

    /* partial: loads what matches, notes the rest */
    float before = cf_model_param_data(a, 2)[0];
    CHECK(cf_model_load_params_ex(a, tmp("plain.safetensors"), CF_LOAD_PARTIAL) == 0);
    CHECK_HAS(cf_last_error(), "loaded 2 of 3 parameters");
    CHECK(cf_model_param_data(a, 2)[0] == before);
    CHECK(memcmp(cf_model_param_data(a, 0), cf_model_param_data(b, 0), 12 * sizeof(float)) == 0);
    cf_model_free(a);
    cf_model_free(b);
    cf_model_free(c);
}

TEST(bad_files)
{
    cf_model *m = net(3, 0);
    CHECK(cf_model_load_params(m, tmp("none.safetensors")) != 0);
    CHECK_HAS(cf_last_error(), "none.safetensors");
    /* truncated */
    CHECK(cf_model_save_params(m, tmp("t.safetensors")) == 0);
    CHECK(truncate(tmp("t.safetensors"), 40) == 0);
    CHECK(cf_model_load_params(m, tmp("t.safetensors")) != 0);
    CHECK_HAS(cf_last_error(), "t.safetensors");
    /* a newer format */
    float w[12] = {0}, b[3] = {0};
    cf_st_tensor t[2] = {{.name = "1.W", .rank = 2, .shape = {4, 3}, .count = 12, .data = w},
                         {.name = "1.b", .rank = 2, .shape = {1, 3}, .count = 3, .data = b}};
    const char *k[] = {"format", "format_version"}, *v[] = {"cflux-params", "7"};
    CHECK(cf_st_write(tmp("v7.safetensors"), 2, t, 2, k, v) == 0);
    CHECK(cf_model_load_params(m, tmp("v7.safetensors")) != 0);
    CHECK_HAS(cf_last_error(), "written by parameter format 7; this build reads 1 to 1");
    /* no metadata at all (as from PyTorch): loads */
    CHECK(cf_st_write(tmp("plain.safetensors"), 2, t, 0, NULL, NULL) == 0);
    CHECK(cf_model_load_params(m, tmp("plain.safetensors")) == 0);
    CHECK(cf_model_param_data(m, 0)[0] == 0);
    /* saving over a directory fails cleanly */
    CHECK(cf_model_save_params(m, dir) != 0);
    cf_model_free(m);
}

TEST(loaded_values_reach_bound_executors)
{
    cf_model *a = net(3, 0), *b = net(3, 0);
    cf_model_set_seed(a, 5);
    CHECK(cf_model_save_params(a, tmp("s.safetensors")) == 0);
    cf_exec *ea = cf_bind(a, 1, 0), *eb = cf_bind(b, 1, 0);
    for (int i = 0; i < 4; i++) cf_exec_input(ea, 0, NULL)[i] = cf_exec_input(eb, 0, NULL)[i] = (float)i;
    cf_forward(ea, 0);
    cf_forward(eb, 0);
    CHECK(cf_exec_output(ea, 0, NULL)[0] != cf_exec_output(eb, 0, NULL)[0]);
    CHECK(cf_model_load_params(b, tmp("s.safetensors")) == 0);   /* after the bind */
    cf_forward(eb, 0);
    CHECK(cf_exec_output(ea, 0, NULL)[0] == cf_exec_output(eb, 0, NULL)[0]);
    cf_exec_free(ea);
    cf_exec_free(eb);
    cf_model_free(a);
    cf_model_free(b);
}

TEST(graph_dump)
{
    cf_model *m = net(3, 0);
    CHECK(cf_model_dump_dot(m, tmp("g.dot")) == 0);
    FILE *f = fopen(tmp("g.dot"), "r");
    char buf[4096] = "";
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[n] = 0;
    if (f) fclose(f);
    CHECK_HAS(buf, "digraph model");
    CHECK_HAS(buf, "param 1.W\\n(4, 3)");
    CHECK_HAS(buf, "input x\\n(B, 4)");
    cf_model_free(m);
}

int main(void)
{
    if (tmpdir_make("params")) return 1;
    RUN(round_trip);
    RUN(mismatches_are_reported_and_change_nothing);
    RUN(bad_files);
    RUN(loaded_values_reach_bound_executors);
    RUN(graph_dump);
    tmpdir_remove();
    return test_summary("params_io");
}
