//! The sans-IO broker: dispatches decoded requests to the group coordinator and partition logs.
//! (Helper C fills in.)
