//! In-memory topic partition logs. (Helper C fills in.)
