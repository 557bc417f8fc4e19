//! Committed offsets per group and partition. (Helper A fills in.)
