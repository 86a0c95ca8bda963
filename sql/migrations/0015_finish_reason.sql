-- Each item's finish reason as upstream main's harness records it (`stop`, `length` when the
-- token cap cut the speech short): a length-capped clip is a content failure the
-- "length-capped" gates count, so it is kept per item.
ALTER TABLE omni.clip_audio ADD COLUMN finish_reason text
    CHECK (finish_reason IS NULL OR length(finish_reason) BETWEEN 1 AND 40);
