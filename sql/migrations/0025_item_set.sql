-- The per-item history's rows (night/history.py): each graded baseline night's observed items
-- and those broken at τ, two arrays a grading. A window's night is stored the first time a
-- window reads it (night_baseline_items.sql), so a 14-night window reads 14 rows rather than
-- 14 nights of clip records, and a decision costs the same with a year of history as with a
-- week (bench/bench_fleet_year.py). A complete grading's clips do not change; re-grading
-- makes a new grading, and deleting one takes its rows.
CREATE TABLE omni.item_set (
    grading_id bigint NOT NULL REFERENCES omni.grading ON DELETE CASCADE,
    tau        double precision NOT NULL,
    observed   text[] NOT NULL,
    broken     text[] NOT NULL,
    PRIMARY KEY (grading_id, tau)
);
