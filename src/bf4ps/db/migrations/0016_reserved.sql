-- Reserved: migration 0016 belongs to another branch. This empty step only keeps the numbers
-- contiguous on this branch (migrate refuses gaps); it is dropped when the branches merge.
SELECT 1;
