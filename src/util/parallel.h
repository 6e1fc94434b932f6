/* parallel.h — OMP(directive): an OpenMP pragma in a macro, nothing without OpenMP.
 *
 * The build is serial unless `make OMP=1` adds -fopenmp (_OPENMP then defined); the
 * parallel kernels write OMP(omp parallel for ...) once and compile either way. With
 * OpenMP, <omp.h> is included here too, for omp_get_max_threads and friends. */
#ifndef KVSCOPE_PARALLEL_H
#define KVSCOPE_PARALLEL_H

#ifdef _OPENMP
#include <omp.h>
#define OMP(directive) _Pragma(#directive)
#else
#define OMP(directive)
#endif

#endif
