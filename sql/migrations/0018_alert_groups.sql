-- Alert groups (Chromeperf's): two or more confirmed regressions of one candidate/baseline pair
-- whose candidate ranges overlap form a group, an `alert` row of kind 'group' its members name.
-- A range is the nights (range_from, range_to]: the last night that ruled the regression out
-- (or the night before the first bad one) and the first bad night; every series runs the
-- branch's head of the night, so overlapping nights are overlapping commits.
-- hold_until: opening posts wait the triage delay (a group's, restarted by each new member) so
-- the group can form before anything is posted. thread_ts: the Slack thread an alert's replies
-- go to (its own parent, or its group's when it was posted in the group's thread).
ALTER TABLE omni.alert DROP CONSTRAINT alert_kind_check;
ALTER TABLE omni.alert ADD CONSTRAINT alert_kind_check
    CHECK (kind IN ('regression', 'infra', 'group'));
ALTER TABLE omni.alert
    ADD COLUMN group_id   bigint REFERENCES omni.alert (alert_id) ON DELETE SET NULL,
    ADD COLUMN range_from date,
    ADD COLUMN range_to   date,
    ADD COLUMN hold_until timestamptz,
    ADD COLUMN thread_ts  text;
CREATE INDEX alert_group_idx ON omni.alert (group_id) WHERE group_id IS NOT NULL;
CREATE INDEX alert_group_range_idx ON omni.alert (range_to) WHERE kind = 'group';
