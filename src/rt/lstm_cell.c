/* lstm_cell.c - rt/lstm_cell.h in vectors of four, the baseline ISA. */
#include "rt/lstm_cell.h"

#define LSTM_FWD cf_lstm_cell_fwd
#define LSTM_BWD cf_lstm_cell_bwd
#define SIGMOID_N cf_vsigmoid
#define TANH_N cf_vtanh
#include "rt/lstm_cell_tmpl.h"
