// tdb_checkpoint's failures, over the fault env (src/testing/env_fault.h):
//  - a target that exists and is not empty, a read-only filesystem, a
//    missing parent: a clear error and nothing created;
//  - out of space or an I/O error at each kind of step (table link or copy,
//    WAL copy, MANIFEST, renames, directory syncs): the error, no target and
//    no staging directory left, the source database unaffected (no sticky
//    error, writes go on), and the next checkpoint succeeds;
//  - a power loss at every mutating step of a checkpoint, dropping all
//    unsynced changes or a random prefix of them: afterwards the target is
//    absent or opens with exactly the data of the checkpoint, and anything
//    else it left never opens as a different database.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "checkpoint_testutil.h"
#include "fault_testutil.h"

namespace {

class CheckpointFaultTest : public FaultDbFixture {
  protected:
    void SetUp() override {
        FaultDbFixture::SetUp();
        Open();
        target_ = out_.file("ck");
        staging_ = target_ + ".checkpoint-tmp";
    }
    // Keys n_..n_+count-1 in one batch (one fsync; a sequence per key).
    void PutBatch(uint64_t count) {
        tdb_batch_t *b = nullptr;
        ASSERT_EQ(tdb_batch_create(&b), TDB_OK);
        for (uint64_t i = 0; i < count; i++, n_++) {
            std::string k = tdbtest::Key(n_), v = tdbtest::Value(n_, 200);
            ASSERT_EQ(tdb_batch_put(b, cf_, k.data(), k.size(), v.data(), v.size(), 0), TDB_OK);
        }
        ASSERT_EQ(tdb_write(db_, b), TDB_OK) << tdb_last_error();
        tdb_batch_destroy(b);
    }
    // 300 keys: two tables of 100 flushed, the rest in the WAL only.
    void Fill() {
        for (int r = 0; r < 3; r++) {
            PutBatch(100);
            if (r < 2) {
                ASSERT_EQ(tdb_flush(db_, cf_), TDB_OK);
            }
        }
    }
    // The checkpoint at target_ opens and holds exactly the source's keys.
    void ExpectCheckpoint(const std::string &path, uint64_t seq) {
        tdb_t *ck = nullptr;
        ASSERT_EQ(ckpt::OpenExisting(path, &ck), TDB_OK) << tdb_last_error();
        EXPECT_EQ(ckpt::LastSeq(ck), seq);
        ckpt::ExpectExactlyKeys(ck, n_, 200);
        EXPECT_EQ(tdb_close(ck), TDB_OK);
    }
    // Nothing of a failed checkpoint is left, and the source works on.
    void ExpectNothingLeftSourceFine() {
        EXPECT_FALSE(ckpt::Exists(target_));
        EXPECT_FALSE(ckpt::Exists(staging_));
        EXPECT_EQ(tdb_bg_error(db_), TDB_OK);
        for (uint64_t i = 0; i < n_; i += 37) EXPECT_EQ(Get(i), TDB_OK) << i;
        ASSERT_EQ(Put(n_), TDB_OK) << tdb_last_error();
        n_++;
    }
    tdbtest::TempDir out_;
    std::string target_, staging_;
    uint64_t n_ = 0;
};

TEST_F(CheckpointFaultTest, TargetMustBeMissingOrEmpty) {
    Fill();
    uint64_t seq = 1;
    EXPECT_EQ(tdb_checkpoint(nullptr, target_.c_str(), &seq), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(tdb_checkpoint(db_, "", &seq), TDB_ERR_INVALID_ARG);
    EXPECT_EQ(tdb_checkpoint(db_, nullptr, &seq), TDB_ERR_INVALID_ARG);
    // Not empty: refused, the file stays, nothing else is created.
    std::filesystem::create_directory(target_);
    { std::ofstream(target_ + "/precious") << "x"; }
    EXPECT_EQ(tdb_checkpoint(db_, target_.c_str(), &seq), TDB_ERR_EXISTS);
    EXPECT_NE(std::string(tdb_last_error()).find("not empty"), std::string::npos) << tdb_last_error();
    EXPECT_EQ(seq, 0u);
    EXPECT_EQ(tdbtest::Slurp(target_ + "/precious"), "x");
    EXPECT_FALSE(ckpt::Exists(staging_));
    // The source database's own directory.
    EXPECT_EQ(tdb_checkpoint(db_, dir_.path().c_str(), &seq), TDB_ERR_EXISTS);
    // A file.
    std::string file = out_.file("file");
    { std::ofstream(file) << "x"; }
    EXPECT_EQ(tdb_checkpoint(db_, file.c_str(), &seq), TDB_ERR_EXISTS);
    // A missing parent.
    EXPECT_EQ(tdb_checkpoint(db_, out_.file("no/such/dir").c_str(), &seq), TDB_ERR_NOT_FOUND);
    // An empty directory is taken.
    std::filesystem::remove_all(target_);
    std::filesystem::create_directory(target_);
    ASSERT_EQ(tdb_checkpoint(db_, target_.c_str(), &seq), TDB_OK) << tdb_last_error();
    EXPECT_EQ(seq, n_);
    ExpectCheckpoint(target_, seq);
    // A staging directory holding a file no checkpoint writes is not removed.
    std::string t2 = out_.file("ck2");
    std::filesystem::create_directory(t2 + ".checkpoint-tmp");
    { std::ofstream(t2 + ".checkpoint-tmp/notes.txt") << "x"; }
    EXPECT_EQ(tdb_checkpoint(db_, t2.c_str(), &seq), TDB_ERR_EXISTS);
    EXPECT_TRUE(ckpt::Exists(t2 + ".checkpoint-tmp/notes.txt"));
}

// EROFS on creating the checkpoint's directory (the fault env stands in for
// a read-only mount): TDB_ERR_READ_ONLY naming the target.
TEST_F(CheckpointFaultTest, ReadOnlyFilesystem) {
    Fill();
    fe_.Rule(FAULT_MKDIR, TDB_ERR_READ_ONLY, out_.path().c_str(), 1, UINT64_MAX);
    uint64_t seq = 1;
    EXPECT_EQ(tdb_checkpoint(db_, target_.c_str(), &seq), TDB_ERR_READ_ONLY);
    EXPECT_NE(std::string(tdb_last_error()).find(target_), std::string::npos) << tdb_last_error();
    EXPECT_EQ(fe_.Stats().injected[FAULT_MKDIR], 1u);
    ExpectNothingLeftSourceFine();
}

struct FailCase {
    const char *name;
    fault_op_t op;
    int code;
    const char *path;  // substring; "OUT": the checkpoint's parent directory
    uint64_t nth;
    bool copy_tables;  // links refused as across filesystems (EXDEV)
};

// Each failure at its step: the error, nothing left, the source unaffected;
// then the same checkpoint succeeds.
TEST_F(CheckpointFaultTest, EveryStepFailsCleanly) {
    Fill();
    const FailCase cases[] = {
        {"WAL copy out of space", FAULT_APPEND, TDB_ERR_NO_SPACE, ".checkpoint-tmp/", 1, false},
        {"WAL copy sync out of space", FAULT_SYNC, TDB_ERR_NO_SPACE, ".checkpoint-tmp/", 1, false},
        {"MANIFEST out of space", FAULT_APPEND, TDB_ERR_NO_SPACE, ".checkpoint-tmp/MANIFEST", 1, false},
        {"table copy out of space", FAULT_APPEND, TDB_ERR_NO_SPACE, ".checkpoint-tmp/", 2, true},
        {"source WAL read error", FAULT_READ, TDB_ERR_IO, ".log", 1, false},
        {"link I/O error", FAULT_LINK, TDB_ERR_IO, ".sst", 2, false},
        {"rename into place fails", FAULT_RENAME, TDB_ERR_IO, "OUT", 2, false},
        {"parent sync fails after the rename", FAULT_SYNC_DIR, TDB_ERR_IO, "OUT", 3, false},
    };
    for (const FailCase &fc : cases) {
        SCOPED_TRACE(fc.name);
        std::string path = strcmp(fc.path, "OUT") == 0 ? out_.path() : fc.path;
        if (fc.copy_tables) fe_.Rule(FAULT_LINK, TDB_ERR_NOT_SUPPORTED, nullptr, 1, UINT64_MAX);
        fe_.Rule(fc.op, fc.code, path.c_str(), fc.nth);
        uint64_t injected = fe_.Stats().injected[fc.op], seq = 1;
        EXPECT_EQ(tdb_checkpoint(db_, target_.c_str(), &seq), fc.code) << tdb_last_error();
        EXPECT_EQ(fe_.Stats().injected[fc.op], injected + 1) << "the fault was not reached";
        EXPECT_EQ(seq, 0u);
        ExpectNothingLeftSourceFine();
        fault_env_clear_rules(fe_.fe);
        if (fc.copy_tables) fe_.Rule(FAULT_LINK, TDB_ERR_NOT_SUPPORTED, nullptr, 1, UINT64_MAX);
        ASSERT_EQ(tdb_checkpoint(db_, target_.c_str(), &seq), TDB_OK) << tdb_last_error();
        if (fc.copy_tables) {  // copies, not links, and as good
            auto ssts = ckpt::Files(target_, ".sst");
            ASSERT_FALSE(ssts.empty());
            for (auto &f : ssts) EXPECT_NE(ckpt::Inode(target_ + "/" + f), ckpt::Inode(dir_.file(f))) << f;
        }
        fault_env_clear_rules(fe_.fe);
        ExpectCheckpoint(target_, seq);
        std::filesystem::remove_all(target_);
    }
}

// A power loss at the k-th mutating call of a checkpoint, for every k until
// one completes (and then right after it returned), losing every unsynced
// change or a random prefix of them.
// After the "reboot" the target is absent or a complete checkpoint; the
// staging directory, if left, opens only if complete; a checkpoint to the
// same target then succeeds.
TEST_F(CheckpointFaultTest, PowerLossAtEveryStep) {
    Fill();
    for (fault_loss_mode_t mode : {FAULT_LOSS_ALL, FAULT_LOSS_TORN}) {
        fault_env_set_loss_mode(fe_.fe, mode);
        int absent = 0, complete = 0;
        uint64_t k = 1;
        for (; k < 100; k++) {
            SCOPED_TRACE("mode " + std::to_string(mode) + ", power loss at mutation " + std::to_string(k));
            // The same shape each round, so the steps stay as many: one
            // table (a rewrite of Key(0) makes the reopen's table
            // overlap the others, so compaction merges instead of moving
            // it), then a WAL tail (the reopen flushed the last one).
            ASSERT_EQ(tdb_compact(db_, cf_), TDB_OK) << tdb_last_error();
            ASSERT_EQ(Put(0), TDB_OK);  // the rewrite of Key(0)
            PutBatch(20);
            const uint64_t seq_expected = ckpt::LastSeq(db_);
            ASSERT_EQ(tdb_pause_background(db_), TDB_OK);  // only the checkpoint mutates
            fault_env_crash_after(fe_.fe, k);
            uint64_t seq = 0;
            int rc = tdb_checkpoint(db_, target_.c_str(), &seq);
            fault_env_crash_after(fe_.fe, 0);
            if (!fault_env_is_down(fe_.fe)) {  // completed: it must survive a power loss now
                ASSERT_EQ(rc, TDB_OK) << tdb_last_error();
                EXPECT_EQ(seq, seq_expected);
                fault_env_power_loss(fe_.fe);
                tdb_close(db_);
                db_ = nullptr;
                fault_env_revive(fe_.fe);
                ASSERT_TRUE(ckpt::Exists(target_)) << "a checkpoint that returned TDB_OK was lost";
                ExpectCheckpoint(target_, seq);
                Open();
                std::filesystem::remove_all(target_);
                break;
            }
            EXPECT_NE(rc, TDB_OK);
            tdb_close(db_);
            db_ = nullptr;
            fault_env_revive(fe_.fe);
            if (ckpt::Exists(target_)) {
                complete++;
                ExpectCheckpoint(target_, seq_expected);
            } else {
                absent++;
                tdb_t *half = nullptr;
                if (ckpt::Exists(staging_) && ckpt::OpenExisting(staging_, &half) == TDB_OK) {
                    EXPECT_EQ(ckpt::LastSeq(half), seq_expected);  // only a complete copy may open
                    ckpt::ExpectExactlyKeys(half, n_, 200);
                    tdb_close(half);
                }
            }
            Open();
            if (!ckpt::Exists(target_)) {  // the leftover is cleared by the next checkpoint
                ASSERT_EQ(tdb_checkpoint(db_, target_.c_str(), &seq), TDB_OK) << tdb_last_error();
                EXPECT_FALSE(ckpt::Exists(staging_));
                ExpectCheckpoint(target_, seq_expected);
            }
            std::filesystem::remove_all(target_);
            std::filesystem::remove_all(staging_);
        }
        EXPECT_LT(k, 100u) << "no checkpoint completed";
        EXPECT_GE(absent, 10) << "too few steps: the loss points were not swept";
        RecordProperty(mode == FAULT_LOSS_ALL ? "complete_after_loss_all" : "complete_after_loss_torn", complete);
        if (mode == FAULT_LOSS_ALL) {
            EXPECT_EQ(complete, 0) << "a rename whose directory was never synced survived";
        }
    }
}

}  // namespace
