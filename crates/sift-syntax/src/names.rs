//! Built-in name tables: services, protocols, EtherTypes, LLC SAPs.
