/* lstm_cell_avx2.c - rt/lstm_cell.h in vectors of eight, for CPUs with AVX2; built
 * with -mavx2 and not -mfma, for the same bits as the baseline build. */
#define CF_VMATH_LANES 8
#include "rt/lstm_cell.h"

#define LSTM_FWD cf_lstm_cell_fwd_avx2
#define LSTM_BWD cf_lstm_cell_bwd_avx2
#define SIGMOID_N cf_vsigmoid_avx2
#define TANH_N cf_vtanh_avx2
#include "rt/lstm_cell_tmpl.h"
