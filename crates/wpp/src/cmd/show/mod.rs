//! Views of a whole run for people and other tools (source annotation, flame graphs, profiler
//! formats, reports). The group is listed in `wpp --help` so its commands sit together; each
//! command is a module here over `crate::input`.
