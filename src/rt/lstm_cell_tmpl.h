/* lstm_cell_tmpl.h - the body of rt/lstm_cell.h's functions, included by a file that
 * has set CF_VMATH_LANES (or not: four) and defined LSTM_FWD and LSTM_BWD, their
 * names, and SIGMOID_N and TANH_N, the maps of rt/vmath.h at that width. Unit arrays (cp, c_out, tc, h, dh, dc, dhn, dcn) hold nblk w floats. */
#include <string.h>

#include "rt/vmath.h"

enum { L = CF_VMATH_LANES };

/* n floats at p in a vector, padded with zeros, and back. The loops below call their
 * bodies with n = L (a constant: plain loads and stores) but for a block's last,
 * partial vector. */
static inline __attribute__((always_inline)) cf_v4 get(const float *p, int n)
{
    cf_v4 v = {0};
    memcpy(&v, p, (size_t)n * sizeof(float));
    return v;
}

static inline __attribute__((always_inline)) void put(float *p, cf_v4 v, int n)
{
    memcpy(p, &v, (size_t)n * sizeof(float));
}

static inline __attribute__((always_inline)) void cell_bwd(const float *z, int w, const float *tc, const float *cp,
                                                           const float *dh, const float *dc, const float *dhn,
                                                           float *dcn, int fresh, float *dz, int n)
{
    const cf_v4 one = cf_v4_set1(1.0f);
    cf_v4 i = get(z, n), f = get(z + w, n), o = get(z + 2 * w, n), g = get(z + 3 * w, n);
    cf_v4 t = get(tc, n), dhv = get(dh, n) + get(dhn, n);
    cf_v4 dcv = get(dc, n);
    if (!fresh) dcv += get(dcn, n);
    dcv += dhv * o * (one - t * t);
    put(dz, dcv * g * i * (one - i), n);
    put(dz + w, dcv * get(cp, n) * f * (one - f), n);
    put(dz + 2 * w, dhv * t * o * (one - o), n);
    put(dz + 3 * w, dcv * i * (one - g * g), n);
    put(dcn, dcv * f, n);
}

/* A block at a time: σ over its i, f and o (3w floats side by side) and tanh over g
 * by the library's maps (tight loops that keep their constants in registers; the
 * same expressions written inline here spilled them and ran 1.5x slower), then c,
 * tanh(c) and h. */
void LSTM_FWD(float *z, int w, int nblk, const float *cp, float *c_out, float *tc, float *h)
{
    for (int u = 0; u < nblk; u++, z += 4 * w, cp += w, c_out += w, tc += w, h += w) {
        SIGMOID_N(z, z, 3 * (size_t)w);
        TANH_N(z + 3 * w, z + 3 * w, (size_t)w);
        int q = 0;
        for (; q + L <= w; q += L)
            put(c_out + q, get(z + w + q, L) * get(cp + q, L) + get(z + q, L) * get(z + 3 * w + q, L), L);
        for (; q < w; q++) c_out[q] = z[w + q] * cp[q] + z[q] * z[3 * w + q];
        TANH_N(tc, c_out, (size_t)w);
        for (q = 0; q + L <= w; q += L) put(h + q, get(z + 2 * w + q, L) * get(tc + q, L), L);
        for (; q < w; q++) h[q] = z[2 * w + q] * tc[q];
    }
}

void LSTM_BWD(const float *z, int w, int nblk, const float *tc, const float *cp, const float *dh, const float *dc,
              const float *dhn, float *dcn, int fresh, float *dz)
{
    for (int u = 0; u < nblk; u++, z += 4 * w, dz += 4 * w) {
        int q = 0, j = u * w;
        for (; q + L <= w; q += L)
            cell_bwd(z + q, w, tc + j + q, cp + j + q, dh + j + q, dc + j + q, dhn + j + q, dcn + j + q, fresh,
                     dz + q, L);
        if (q < w)
            cell_bwd(z + q, w, tc + j + q, cp + j + q, dh + j + q, dc + j + q, dhn + j + q, dcn + j + q, fresh,
                     dz + q, w - q);
    }
}
