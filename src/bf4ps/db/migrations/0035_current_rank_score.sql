-- Issue 49 (truth in every number), item 3: a soldier's progress within his rank is from the
-- current rank's points to the next rank's, as Battlelog's overview gives both
-- (currentRankNeeded.pointsNeeded, nextRankNeeded.pointsNeeded); only the next was kept, so the
-- card's bar was the score over the next rank's points (always 90-99 % full).
ALTER TABLE profile_current ADD COLUMN current_rank_score bigint;
