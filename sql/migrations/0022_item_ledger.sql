-- The standing-failure ledger (issue 69), kept incrementally: each graded night of a series'
-- branch is read once into one row a night (`ledger_night`: which run and grading it read)
-- and one small row per item (`item_night`: broken, mode, origin, task-text leak), so a
-- ledger over a window reads the window's rows, never clip records, however long the history.
CREATE TABLE omni.ledger_night (
    night_id    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    benchmark   text NOT NULL,
    model       text NOT NULL,
    lane        text NOT NULL,
    branch      text NOT NULL,
    nightly     date NOT NULL,
    run_id      bigint NOT NULL REFERENCES omni.run ON DELETE CASCADE,
    grading_id  bigint NOT NULL,
    commit_sha  text,
    tau         double precision NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (benchmark, model, lane, branch, nightly)
);

-- One item on one night; only items that counted that night (an infra item has no row).
CREATE TABLE omni.item_night (
    night_id bigint NOT NULL REFERENCES omni.ledger_night ON DELETE CASCADE,
    utt_id   text NOT NULL,
    broken   boolean NOT NULL,
    mode     text,
    origin   text,
    leak     boolean NOT NULL DEFAULT false,
    PRIMARY KEY (night_id, utt_id)
);
-- The items broken on a night: a window's read starts from them (most items are clean).
CREATE INDEX item_night_broken_idx ON omni.item_night (night_id, utt_id) WHERE broken;

-- What the family knows about each item of a series (its groups), as its latest read night
-- stored them.
CREATE TABLE omni.ledger_item (
    benchmark text NOT NULL,
    model     text NOT NULL,
    lane      text NOT NULL,
    utt_id    text NOT NULL,
    groups    jsonb NOT NULL,
    PRIMARY KEY (benchmark, model, lane, utt_id)
);

-- Each item's state (when not clean) as the ledger of a night read it, written when that
-- night's ledger is loaded (a reload replaces it): the Grafana panels' rows.
CREATE TABLE omni.ledger_state (
    night_id bigint NOT NULL REFERENCES omni.ledger_night ON DELETE CASCADE,
    utt_id   text NOT NULL,
    state    text NOT NULL,
    mode     text,
    PRIMARY KEY (night_id, utt_id)
);

-- One row per item per night it counted as chronic (chronic or new) on a series' branch.
CREATE VIEW omni.v_ledger_chronic AS
SELECT n.benchmark || '|' || n.model || '|' || n.lane AS series_key, n.benchmark, n.model,
       n.lane, n.branch, n.nightly, s.utt_id, s.mode, s.state
FROM omni.ledger_state s
JOIN omni.ledger_night n ON n.night_id = s.night_id
WHERE s.state IN ('chronic', 'new');

GRANT SELECT ON omni.ledger_night, omni.item_night, omni.ledger_item, omni.ledger_state,
    omni.v_ledger_chronic TO omni_reader;
