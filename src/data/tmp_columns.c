/* placeholder until the data layer's column info lands (removed at merge) */
#include "data/data.h"
const char *cf_dataset_target_name(const cf_dataset *d) { return cf_dataset_name(d); }
int cf_dataset_label_column(const cf_dataset *d) { return -1; }
int cf_dataset_column_count(const cf_dataset *d) { return 0; }
const char *cf_dataset_column_name(const cf_dataset *d, int col) { return NULL; }
int cf_set_memory_limit(size_t bytes) { return 0; }
