-- A member joins its group: the group's range covers the member's, its hold restarts (another
-- series may still be deciding), and a resolved group reopens.
WITH g AS (
    UPDATE omni.alert
    SET range_from = least(range_from, %(range_from)s),
        range_to = greatest(range_to, %(range_to)s),
        last_nightly = greatest(last_nightly, %(nightly)s),
        hold_until = greatest(coalesce(hold_until, now()), now() + make_interval(secs => %(delay_s)s)),
        state = 'open',
        resolved_nightly = NULL
    WHERE alert_id = %(group_id)s
    RETURNING alert_id
)
UPDATE omni.alert SET group_id = (SELECT alert_id FROM g) WHERE alert_id = %(member_id)s
