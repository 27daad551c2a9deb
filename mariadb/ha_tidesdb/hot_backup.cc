/* hot_backup: SET GLOBAL tidesdb_backup_dir = '/path' (see hot_backup.h and
 * docs/design/backup.md).
 *
 * What a backup directory holds:
 *   #tidesdb/              tdb_checkpoint of the engine's database (every
 *                          TidesDB table and the data dictionary)
 *   <db>/<table>.frm       the table definitions of the TidesDB tables
 *                          (.par, .TRG and the .TRN naming them too), and
 *                          each such schema's views and db.opt
 *   tidesdb_binlog_pos     the backup point: binary log file and position,
 *                          @@gtid_binlog_pos, library sequence (written last)
 *
 * Invariants
 *  1. One point in time. Everything is taken while the session holds
 *     BACKUP STAGE BLOCK_COMMIT: the statement runs the stages itself when
 *     the session has none (and ends them), or moves the session's own
 *     stages on to BLOCK_COMMIT (invariant 4). Under
 *     it no DDL runs (the .frm files and the dictionary agree, handlerton
 *     check_version) and no transaction commits: the server takes the
 *     BACKUP_COMMIT lock before an engine's prepare and releases it after
 *     the engine's commit and the binary log write (ha_commit_trans), so
 *     every transaction is in both the binary log position read here and
 *     the checkpoint, or in neither. The checkpoint is of one library
 *     sequence (checkpoint.md); writes the engine makes outside
 *     transactions (dictionary counters, dict.h invariant 6) may land on
 *     either side, as after a crash.
 *  2. Never mistaken for complete. tidesdb_binlog_pos is written (to a
 *     temporary name, synced, renamed, directory synced) after every other
 *     file was synced; a failure removes what this statement created.
 *  3. The directory must be absent (its parent existing) or empty and
 *     writable; anything else is refused before any lock is taken.
 *  4. Commits are blocked only for the checkpoint: the memtables are
 *     flushed first (tdb_flush), before BLOCK_COMMIT, so the checkpoint
 *     copies only the WAL written since. A session at START, FLUSH or
 *     BLOCK_DDL is moved on to BLOCK_COMMIT (and stays there for its own
 *     BACKUP STAGE END, so it can copy more files of the same point); one
 *     already at BLOCK_COMMIT is used as it is (no flush: commits wait).
 */
#include "hot_backup.h"

#include "dict.h"
#include "sysvars.h"

/* The server's BACKUP STAGE functions (sql/backup.h). */
#include "backup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <map>
#include <set>
#include <vector>

namespace tidesql {

const char *const BACKUP_POS_FILE = "tidesdb_binlog_pos";

/* Refuse the directory: ER_WRONG_VALUE_FOR_VAR with the reason. */
static int refuse(const char *fmt, const char *path, const char *detail = NULL) {
  char msg[FN_REFLEN + 256];
  snprintf(msg, sizeof msg, fmt, path, detail ? detail : "");
  my_printf_error(ER_WRONG_VALUE_FOR_VAR, "tidesdb_backup_dir: %s", MYF(0), msg);
  return 1;
}

/* Report a failure of the backup itself (after the checks). */
static int fail(const std::string &what) {
  my_printf_error(ER_UNKNOWN_ERROR, "tidesdb_backup_dir: backup failed: %s", MYF(0), what.c_str());
  return 1;
}

static std::string errno_text(const std::string &what, const std::string &path) {
  return what + " '" + path + "': " + strerror(errno);
}

static int sync_path(const std::string &path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  int rc = fsync(fd);
  close(fd);
  return rc;
}

/* Copy a file (synced), creating dst. 0, or -1 with errno. */
static int copy_file(const std::string &src, const std::string &dst) {
  int in = open(src.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return -1;
  int out = open(dst.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0660);
  if (out < 0) {
    int e = errno;
    close(in);
    errno = e;
    return -1;
  }
  char buf[64 * 1024];
  int rc = 0;
  for (;;) {
    ssize_t n = read(in, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      rc = -1;
      break;
    }
    for (ssize_t off = 0; off < n;) {
      ssize_t w = write(out, buf + off, (size_t)(n - off));
      if (w < 0) {
        if (errno == EINTR) continue;
        rc = -1;
        break;
      }
      off += w;
    }
    if (rc) break;
  }
  if (rc == 0 && fsync(out) != 0) rc = -1;
  int e = errno;
  close(in);
  close(out);
  errno = e;
  return rc;
}

/* Remove a directory tree this statement created (best effort). */
static void remove_tree(const std::string &path) {
  DIR *d = opendir(path.c_str());
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      std::string p = path + "/" + e->d_name;
      struct stat st;
      if (lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) remove_tree(p);
      else unlink(p.c_str());
    }
    closedir(d);
  }
  rmdir(path.c_str());
}

/* The files of one schema that define the given tables: .frm, .par
 * (partitioned tables), .TRG and the .TRN files whose trigger_table is one
 * of them, the schema's views (.frm) and db.opt. Names are the server's
 * file names (encoded). */
static std::vector<std::string> schema_files(const std::string &db, const std::set<std::string> &tables) {
  std::vector<std::string> out;
  struct stat st;
  for (const std::string &t : tables) {
    for (const char *ext : {".frm", ".par", ".TRG"}) {
      std::string f = t + ext;
      if (stat(("./" + db + "/" + f).c_str(), &st) == 0) out.push_back(f);
    }
  }
  if (stat(("./" + db + "/db.opt").c_str(), &st) == 0) out.push_back("db.opt");
  DIR *d = opendir(("./" + db).c_str());
  if (!d) return out;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t n = strlen(e->d_name);
    if (n > 4 && strcmp(e->d_name + n - 4, ".frm") == 0 && !tables.count(std::string(e->d_name, n - 4))) {
      /* A view of the schema (its .frm is text starting TYPE=VIEW). */
      FILE *f = fopen(("./" + db + "/" + e->d_name).c_str(), "r");
      char head[10] = {0};
      if (f && fread(head, 1, 9, f) == 9 && strcmp(head, "TYPE=VIEW") == 0) out.push_back(e->d_name);
      if (f) fclose(f);
      continue;
    }
    if (n < 5 || strcmp(e->d_name + n - 4, ".TRN") != 0) continue;
    FILE *f = fopen(("./" + db + "/" + e->d_name).c_str(), "r");
    if (!f) continue;
    char line[FN_REFLEN + 32];
    while (fgets(line, sizeof line, f)) {
      if (strncmp(line, "trigger_table=", 14) != 0) continue;
      std::string t(line + 14);
      while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
      if (tables.count(t)) out.push_back(e->d_name);
      break;
    }
    fclose(f);
  }
  closedir(d);
  return out;
}

/* The point the backup stands for, read under BLOCK_COMMIT. */
struct BackupPoint {
  bool log_bin = false;
  std::string binlog_file, gtid;
  ulonglong binlog_pos = 0;
};

static void read_binlog_point(BackupPoint *p) {
  p->log_bin = opt_bin_log && mysql_bin_log.is_open();
  if (!p->log_bin) return;
  LOG_INFO li;
  if (mysql_bin_log.get_current_log(&li) == 0) {
    const char *base = strrchr(li.log_file_name, '/');
    p->binlog_file = base ? base + 1 : li.log_file_name;
    p->binlog_pos = (ulonglong)li.pos;
  }
  char buf[256];
  String s(buf, sizeof buf, system_charset_info);
  s.length(0);
  if (!mysql_bin_log.append_state_pos(&s)) p->gtid.assign(s.ptr(), s.length());
}

/* Write tidesdb_binlog_pos atomically (temporary name, sync, rename, sync
 * the directory). */
static int write_point_file(const std::string &dir, const BackupPoint &p, uint64_t seq, size_t ntables) {
  char when[32];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  std::string text;
  text += "# TidesDB backup point, taken under BACKUP STAGE BLOCK_COMMIT (docs/design/backup.md)\n";
  text += std::string("log_bin=") + (p.log_bin ? "ON" : "OFF") + "\n";
  text += "gtid_binlog_pos=" + p.gtid + "\n";
  text += "binlog_file=" + p.binlog_file + "\n";
  text += "binlog_pos=" + (p.log_bin ? std::to_string(p.binlog_pos) : std::string()) + "\n";
  text += "server_id=" + std::to_string((ulonglong)global_system_variables.server_id) + "\n";
  text += "tidesdb_sequence=" + std::to_string((unsigned long long)seq) + "\n";
  text += "tables=" + std::to_string((unsigned long long)ntables) + "\n";
  text += std::string("time=") + when + "\n";
  std::string tmp = dir + "/" + BACKUP_POS_FILE + ".tmp", fin = dir + "/" + BACKUP_POS_FILE;
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
  if (fd < 0) return -1;
  ssize_t w = write(fd, text.data(), text.size());
  int rc = (w == (ssize_t)text.size() && fsync(fd) == 0) ? 0 : -1;
  int e = errno;
  close(fd);
  if (rc == 0 && rename(tmp.c_str(), fin.c_str()) != 0) rc = -1, e = errno;
  if (rc == 0 && sync_path(dir) != 0) rc = -1, e = errno;
  if (rc) unlink(tmp.c_str());
  errno = e;
  return rc;
}

/* Whether a file can be created in dir: access() passes for a root server
 * where a read-only or special filesystem still refuses, so try one. */
static int probe_writable(const std::string &dir, bool remove_dir) {
  std::string probe = dir + "/.tidesdb_probe";
  int fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    int e = errno;
    if (remove_dir) rmdir(dir.c_str());
    return refuse("'%s' is not writable: %s", dir.c_str(), strerror(e));
  }
  close(fd);
  unlink(probe.c_str());
  return 0;
}

/* Check the directory (invariant 3); create it if absent. */
static int prepare_dir(const std::string &path, bool *created) {
  *created = false;
  if (path.empty()) return refuse("a directory path is needed%s", "");
  if (path[0] != '/') return refuse("'%s' is not an absolute path%s", path.c_str());
  struct stat st;
  if (stat(path.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) return refuse("'%s' exists and is not a directory%s", path.c_str());
    DIR *d = opendir(path.c_str());
    if (!d) return refuse("cannot read '%s': %s", path.c_str(), strerror(errno));
    struct dirent *e;
    bool empty = true;
    while ((e = readdir(d)) != NULL)
      if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) empty = false;
    closedir(d);
    if (!empty) return refuse("'%s' exists and is not empty%s", path.c_str());
    return probe_writable(path, false);
  }
  if (errno != ENOENT) return refuse("cannot use '%s': %s", path.c_str(), strerror(errno));
  std::string parent = path.substr(0, path.rfind('/'));
  if (parent.empty()) parent = "/";
  if (stat(parent.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return refuse("the parent directory of '%s' does not exist%s", path.c_str());
  if (mkdir(path.c_str(), 0750) != 0) return refuse("cannot create '%s': %s", path.c_str(), strerror(errno));
  if (probe_writable(path, true)) return 1;
  *created = true;
  return 0;
}

/* The backup proper, the session holding BLOCK_COMMIT. */
static int take_backup(const std::string &dir, std::vector<std::string> *made, uint64_t *seq, size_t *ntables,
                       BackupPoint *point) {
  read_binlog_point(point);
  std::vector<std::string> names = dict_table_names();
  /* "db/table", partitions "db/table#P#p0" -> their table's files. */
  std::map<std::string, std::set<std::string>> by_db;
  for (const std::string &n : names) {
    size_t slash = n.find('/');
    if (slash == std::string::npos) continue;
    std::string db = n.substr(0, slash), t = n.substr(slash + 1);
    size_t p = t.find("#P#");
    if (p != std::string::npos) t.resize(p);
    if (t.compare(0, 4, "#sql") == 0) continue; /* an ALTER's leftover */
    by_db[db].insert(t);
  }
  *ntables = 0;
  for (auto &kv : by_db) *ntables += kv.second.size();

  std::string cp = dir + "/#tidesdb";
  int rc = tdb_checkpoint(g_db, cp.c_str(), seq);
  if (rc != TDB_OK) return fail(std::string("checkpoint: ") + tdb_strerror(rc) + ": " + tdb_last_error());
  made->push_back(cp);

  for (auto &kv : by_db) {
    std::string out = dir + "/" + kv.first;
    if (mkdir(out.c_str(), 0750) != 0) return fail(errno_text("cannot create", out));
    made->push_back(out);
    for (const std::string &f : schema_files(kv.first, kv.second)) {
      std::string src = "./" + kv.first + "/" + f, dst = out + "/" + f;
      if (copy_file(src, dst) != 0) return fail(errno_text("cannot copy", src));
    }
    if (sync_path(out) != 0) return fail(errno_text("cannot sync", out));
  }
  if (sync_path(dir) != 0) return fail(errno_text("cannot sync", dir));
  sysvars_crash_point("backup_before_pos_file");
  if (write_point_file(dir, *point, *seq, *ntables) != 0)
    return fail(errno_text("cannot write", dir + "/" + BACKUP_POS_FILE));
  return 0;
}

int backup_dir_check(THD *thd, struct st_mysql_sys_var *, void *save, struct st_mysql_value *value) {
  char buff[FN_REFLEN];
  int len = sizeof buff;
  const char *str = value->val_str(value, buff, &len);
  std::string path = str ? std::string(str, (size_t)len) : std::string();
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (!g_db) return fail("the TidesDB database is not open");

  backup_stages entered = thd->current_backup_stage;
  bool created;
  if (prepare_dir(path, &created)) return 1;

  ulonglong t0 = my_interval_timer();
  bool own = entered == BACKUP_FINISHED;
  /* Invariant 4: flush before commits are blocked. */
  if (entered != BACKUP_LOCK_COMMIT) {
    int rc = tdb_flush(g_db, NULL);
    if (rc != TDB_OK)
      log_warning("TidesDB: backup to %s: flushing the memtables first failed (%s: %s); the checkpoint "
                  "copies their WAL instead",
                  path.c_str(), tdb_strerror(rc), tdb_last_error());
  }
  ulonglong t_flushed = my_interval_timer();
  if ((own && run_backup_stage(thd, BACKUP_START)) ||
      (entered != BACKUP_LOCK_COMMIT && run_backup_stage(thd, BACKUP_LOCK_COMMIT))) {
    if (own && thd->current_backup_stage != BACKUP_FINISHED) backup_end(thd);
    if (created) rmdir(path.c_str());
    return 1;
  }
  ulonglong t_locked = my_interval_timer();
  std::vector<std::string> made;
  uint64_t seq = 0;
  size_t ntables = 0;
  BackupPoint point;
  int err = take_backup(path, &made, &seq, &ntables, &point);
  ulonglong t_done = my_interval_timer();
  if (own) backup_end(thd);
  if (err) {
    for (auto it = made.rbegin(); it != made.rend(); ++it) remove_tree(*it);
    if (created) rmdir(path.c_str());
    log_warning("TidesDB: backup to %s failed", path.c_str());
    return 1;
  }
  log_info("TidesDB: backup to %s: %zu tables, sequence %llu, binlog %s:%s gtid '%s'; %llu ms: flush "
           "%llu ms, then %llu ms under BLOCK_COMMIT%s",
           path.c_str(), ntables, (unsigned long long)seq, point.log_bin ? point.binlog_file.c_str() : "OFF",
           point.log_bin ? std::to_string(point.binlog_pos).c_str() : "-", point.gtid.c_str(),
           (t_done - t0) / 1000000, (t_flushed - t0) / 1000000, (t_done - t_locked) / 1000000,
           own ? "" : " (the session's stage)");
  *(const char **)save = thd->strmake(path.c_str(), path.size());
  return 0;
}

}  // namespace tidesql
