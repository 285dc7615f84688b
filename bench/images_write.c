/* images_write.c - for bench/images.sh: Fashion-MNIST as an image folder, and the cost
 * of decoding it.
 *
 *   bench_images write IMAGES LABELS DIR   every image of the IDX pair as a grey PNG,
 *                                           DIR/cK/NNNNN.png (K its label)
 *   bench_images decode DIR SHAPE           decode every image of images:DIR once, in
 *                                           order, on this thread: microseconds per image
 *
 * SHAPE is C,H,W (1,28,28 for models/cnn.flux). A benchmark tool, not a test. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cflux.h"
#include "data/png.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int write_all(const char *images, const char *labels, const char *dir)
{
    cf_dataset *d = cf_dataset_load_idx(images, labels);
    if (!d) return fprintf(stderr, "%s\n", cf_last_error()), 1;
    size_t n = cf_dataset_count(d), per = 784;
    const float *x = cf_dataset_x(d), *y = cf_dataset_y(d);
    mkdir(dir, 0755);
    unsigned char px[784];
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/c%d", dir, (int)y[i]);
        mkdir(path, 0755);
        snprintf(path, sizeof path, "%s/c%d/%05zu.png", dir, (int)y[i], i);
        for (size_t j = 0; j < per; j++) px[j] = (unsigned char)(x[i * per + j] * 255.0f + 0.5f);
        unsigned char *png;
        size_t len;
        FILE *f;
        if (cf_png_encode(px, 28, 28, 1, &png, &len) || !(f = fopen(path, "wb")))
            return fprintf(stderr, "%s: cannot write\n", path), 1;
        fwrite(png, 1, len, f);
        fclose(f);
        free(png);
    }
    printf("%zu images in %s\n", n, dir);
    cf_dataset_free(d);
    return 0;
}

static int decode_all(const char *dir, const char *shape)
{
    cf_data_opts o = cf_data_defaults();
    o.image.rank = 3;
    if (sscanf(shape, "%d,%d,%d", &o.image.d[0], &o.image.d[1], &o.image.d[2]) != 3) return 2;
    char spec[4200];
    snprintf(spec, sizeof spec, "images:%s", dir);
    cf_dataset *tr, *te;
    double t0 = now();
    if (cf_data_open_opts(spec, &o, &tr, &te)) return fprintf(stderr, "%s\n", cf_last_error()), 1;
    double t1 = now();
    size_t n = cf_dataset_count(tr), per = (size_t)o.image.d[0] * o.image.d[1] * o.image.d[2];
    float *x = malloc(per * sizeof *x);
    for (size_t i = 0; i < n; i++)
        if (cf_dataset_read(tr, i, 1, x)) return fprintf(stderr, "%s\n", cf_last_error()), 1;
    double t2 = now();
    printf("{\"images\": %zu, \"open_us_per_image\": %.2f, \"decode_us_per_image\": %.2f}\n", n, 1e6 * (t1 - t0) / n,
           1e6 * (t2 - t1) / n);
    free(x);
    cf_dataset_free(tr);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[1], "write")) return write_all(argv[2], argv[3], argv[4]);
    if (argc == 4 && !strcmp(argv[1], "decode")) return decode_all(argv[2], argv[3]);
    fprintf(stderr, "usage: bench_images write IMAGES LABELS DIR | decode DIR C,H,W\n");
    return 2;
}
