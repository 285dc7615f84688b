/* lstm_cell.h - the elementwise part of one LSTM step for one row (one sequence),
 * over units in blocks of w: a block holds its units' gates as four runs of w
 * floats, i, f, o, g (ops/lstm.c regroups the columns so). The product part of the
 * step is the caller's.
 *
 * Forward, z the pre-activations on entry:
 *   i, f, o = σ(z_i, z_f, z_o), g = tanh(z_g), written back over z;
 *   c = f cp + i g (c_out), tc = tanh(c), h = o tc.
 * Backward, z the activated gates (as forward left them), dh and dc the gradients
 * reaching h and c of this step from outside (the output) and dhn, dcn from the
 * step after (dcn not read when fresh: the last step):
 *   dc' = dc + dcn + dh' o (1 - tc^2), dh' = dh + dhn;
 *   dz_i = dc' g i (1 - i), dz_f = dc' cp f (1 - f), dz_o = dh' tc o (1 - o),
 *   dz_g = dc' i (1 - g^2); dcn <- dc' f, the gradient reaching cp.
 *
 * One source (rt/lstm_cell_tmpl.h) built twice: vectors of four (the baseline ISA),
 * and of eight for CPUs with AVX2 (rt/lstm_cell_avx2.c, built with -mavx2 and not
 * -mfma), the same operations on every lane, so the same bits either way and
 * whatever w. Units per block: any w (the last vector of a block padded). */
#ifndef CF_RT_LSTM_CELL_H
#define CF_RT_LSTM_CELL_H

void cf_lstm_cell_fwd(float *z, int w, int nblk, const float *cp, float *c_out, float *tc, float *h);
void cf_lstm_cell_bwd(const float *z, int w, int nblk, const float *tc, const float *cp, const float *dh,
                      const float *dc, const float *dhn, float *dcn, int fresh, float *dz);
#if defined(__x86_64__)
void cf_lstm_cell_fwd_avx2(float *z, int w, int nblk, const float *cp, float *c_out, float *tc, float *h);
void cf_lstm_cell_bwd_avx2(const float *z, int w, int nblk, const float *tc, const float *cp, const float *dh,
                           const float *dc, const float *dhn, float *dcn, int fresh, float *dz);
#endif

#endif
