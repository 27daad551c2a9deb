/*
 * db/filename: the names of a database's data files (LevelDB's
 * filename.h): "<number>.log" WALs and "<number>.sst" tables, numbered from
 * one counter. A narrow header for tools that read a database's directory.
 */
#ifndef TDB_DB_FILENAME_H
#define TDB_DB_FILENAME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Parse a data file name "<digits>.<ext>" ("12.sst", "7.log"); 1 on success. */
int db_parse_file_name(const char *name, const char *ext, uint64_t *num);
/* WAL file path for a file number: "<dir>/<number, 6 digits>.log". */
void db_wal_name(char *out, size_t cap, const char *dir, uint64_t number);

#ifdef __cplusplus
}
#endif
#endif
