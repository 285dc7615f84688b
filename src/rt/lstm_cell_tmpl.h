/* lstm_cell_tmpl.h - the body of rt/lstm_cell.h's functions, included by a file that
 * has set CF_VMATH_LANES (or not: four) and defined LSTM_FWD and LSTM_BWD, their
 * names. Unit arrays (cp, c_out, tc, h, dh, dc, dhn, dcn) hold nblk w floats. */
#include <string.h>

#include "rt/vmath.h"

enum { L = CF_VMATH_LANES };

/* n floats at p in a vector, padded with zeros (n == L: one plain load) */
static inline cf_v4 get(const float *p, int n)
{
    cf_v4 v = {0};
    if (n == L) memcpy(&v, p, sizeof v);
    else memcpy(&v, p, (size_t)n * sizeof(float));
    return v;
}

static inline void put(float *p, cf_v4 v, int n)
{
    if (n == L) memcpy(p, &v, sizeof v);
    else memcpy(p, &v, (size_t)n * sizeof(float));
}

/* Two passes over the blocks: the gates, then the cell. Each pass's iterations are
 * independent and short enough for the CPU to overlap several (one pass doing both
 * ran 1.5x slower on a Zen 1: a chain of two transcendentals per iteration). */
void LSTM_FWD(float *z, int w, int nblk, const float *cp, float *c_out, float *tc, float *h)
{
    for (int u = 0; u < nblk; u++) {
        float *zu = z + (size_t)u * 4 * w;
        for (int q = 0; q < w; q += L) {
            int n = w - q < L ? w - q : L;
            put(zu + q, cf_v4_sigmoid(get(zu + q, n)), n);
            put(zu + w + q, cf_v4_sigmoid(get(zu + w + q, n)), n);
            put(zu + 2 * w + q, cf_v4_sigmoid(get(zu + 2 * w + q, n)), n);
            put(zu + 3 * w + q, cf_v4_tanh(get(zu + 3 * w + q, n)), n);
        }
    }
    for (int u = 0; u < nblk; u++) {
        const float *zu = z + (size_t)u * 4 * w;
        for (int q = 0; q < w; q += L) {
            int n = w - q < L ? w - q : L, j = u * w + q;
            cf_v4 i = get(zu + q, n), f = get(zu + w + q, n), o = get(zu + 2 * w + q, n), g = get(zu + 3 * w + q, n);
            cf_v4 c = f * get(cp + j, n) + i * g, t = cf_v4_tanh(c);
            put(c_out + j, c, n);
            put(tc + j, t, n);
            put(h + j, o * t, n);
        }
    }
}

void LSTM_BWD(const float *z, int w, int nblk, const float *tc, const float *cp, const float *dh, const float *dc,
              const float *dhn, float *dcn, int fresh, float *dz)
{
    const cf_v4 one = cf_v4_set1(1.0f);
    for (int u = 0; u < nblk; u++, z += 4 * w, dz += 4 * w)
        for (int q = 0; q < w; q += L) {
            int n = w - q < L ? w - q : L, j = u * w + q;
            cf_v4 i = get(z + q, n), f = get(z + w + q, n), o = get(z + 2 * w + q, n), g = get(z + 3 * w + q, n);
            cf_v4 t = get(tc + j, n), dhv = get(dh + j, n) + get(dhn + j, n);
            cf_v4 dcv = get(dc + j, n);
            if (!fresh) dcv += get(dcn + j, n);
            dcv += dhv * o * (one - t * t);
            put(dz + q, dcv * g * i * (one - i), n);
            put(dz + w + q, dcv * get(cp + j, n) * f * (one - f), n);
            put(dz + 2 * w + q, dhv * t * o * (one - o), n);
            put(dz + 3 * w + q, dcv * i * (one - g * g), n);
            put(dcn + j, dcv * f, n);
        }
}
