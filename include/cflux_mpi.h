/* cflux_mpi.h - cflux inside a larger MPI program (a build with CFLUX_MPI).
 *
 *   MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
 *   cf_dist_init_comm(MPI_COMM_WORLD);     // or any communicator of the program's
 *   ... cf_fit_opts o = cf_fit_defaults(); o.distributed = 1; ...
 *
 * cflux duplicates the communicator (its messages never mix with the program's) and
 * never calls MPI_Finalize on an MPI it did not initialise. */
#ifndef CFLUX_MPI_H
#define CFLUX_MPI_H

#include <mpi.h>

#include "cflux.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Train data-parallel over the ranks of comm (MPI already initialised). 0 or -1. */
CF_API int cf_dist_init_comm(MPI_Comm comm);

#ifdef __cplusplus
}
#endif

#endif
