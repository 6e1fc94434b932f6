/* sysinfo.h — what is measured, not computed: the clock and the process's memory. */
#ifndef KVSCOPE_SYSINFO_H
#define KVSCOPE_SYSINFO_H

#include <stddef.h>

/* Seconds on the monotonic clock. */
double now_seconds(void);
/* Resident set size of this process in bytes, from /proc/self/statm; 0 if unknown. */
size_t rss_bytes(void);
/* Memory the system can still give a process without swapping, in bytes, from
 * /proc/meminfo's MemAvailable; 0 if unknown. */
size_t mem_available_bytes(void);

#endif
