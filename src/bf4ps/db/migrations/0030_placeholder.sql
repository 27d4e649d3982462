-- A placeholder for migration 0030, another branch's (the queue's cost): this branch's 0031
-- needs a number before it. Dropped when that branch is merged.
SELECT 1;
