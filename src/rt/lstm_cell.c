/* lstm_cell.c - rt/lstm_cell.h in vectors of four, the baseline ISA. */
#include "rt/lstm_cell.h"

#define LSTM_FWD cf_lstm_cell_fwd
#define LSTM_BWD cf_lstm_cell_bwd
#include "rt/lstm_cell_tmpl.h"
