/* db/filename: data file names (see db/filename.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/filename.h"

/* Parse a data file name "<digits>.<ext>" into its number; 1 on success. */
int db_parse_file_name(const char *name, const char *ext, uint64_t *num) {
    char *end;
    if (name[0] < '0' || name[0] > '9') return 0;
    unsigned long long v = strtoull(name, &end, 10);
    if (*end != '.' || strcmp(end + 1, ext) != 0) return 0;
    *num = v;
    return 1;
}

/* WAL file path for a file number. */
void db_wal_name(char *out, size_t cap, const char *dir, uint64_t number) {
    snprintf(out, cap, "%s/%06llu.log", dir, (unsigned long long)number);
}
