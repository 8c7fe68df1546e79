//! Prepare (schema, parallel table load), cleanup and the check step of a custom workload
//! (helper "load" writes it).
