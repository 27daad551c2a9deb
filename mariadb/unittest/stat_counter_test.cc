// StatCounter (ha_tidesdb/stat_counter.h): adds from many threads sum
// exactly; threads on different CPUs add to different slots.
#include "stat_counter.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <thread>
#include <vector>

using tidesql::StatCounter;

TEST(StatCounter, SumsEveryThreadsAdds) {
    StatCounter c;
    EXPECT_EQ(0u, c.load());
    const int threads = 24, per = 20000;  // more threads than slots
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; t++)
        ts.emplace_back([&c, t] {
            for (int i = 0; i < per; i++) {
                if (i % 2)
                    c++;
                else
                    c.add((unsigned long long)t % 3);
            }
        });
    for (auto &t : ts) t.join();
    unsigned long long want = 0;
    for (int t = 0; t < threads; t++) want += (unsigned long long)per / 2 + (unsigned long long)(per / 2) * (t % 3);
    EXPECT_EQ(want, c.load());
    unsigned long long as_value = c;  // the status code reads it this way
    EXPECT_EQ(want, as_value);
}

TEST(StatCounter, ThreadsOnDifferentCpusUseDifferentSlots) {
    // A thread pinned to CPU c adds to slot c % kSlots: two CPUs, two
    // slots, so threads on different cores never write the same line.
    cpu_set_t allowed;
    ASSERT_EQ(0, sched_getaffinity(0, sizeof allowed, &allowed));
    if (!CPU_ISSET(0, &allowed) || !CPU_ISSET(1, &allowed)) GTEST_SKIP() << "CPUs 0 and 1 not both usable";
    StatCounter c;
    auto on_cpu = [&c](int cpu) {
        std::thread t([&c, cpu] {
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET(cpu, &set);
            ASSERT_EQ(0, pthread_setaffinity_np(pthread_self(), sizeof set, &set));
            for (int i = 0; i < 1000; i++) c++;
        });
        t.join();
    };
    on_cpu(0);
    on_cpu(1);
    EXPECT_EQ(1000u, c.slot_load(0));
    EXPECT_EQ(1000u, c.slot_load(1));
    EXPECT_EQ(2000u, c.load());
    EXPECT_EQ(64u, sizeof(StatCounter) / StatCounter::kSlots);
}
