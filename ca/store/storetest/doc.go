// Package storetest is the conformance suite of the storage engines: one
// table of cases (reserve, complete, void, lookup by name and serial,
// records in serial order, revocation and its log, CRL number, current
// CRL and current delta CRL with their published copies, enrollments, the
// lock and its loss, a copy loaded into an empty store) that every
// implementation of store.Store passes.
//
// An engine's tests call Run with a function that makes a fresh, empty
// store of a CA (a Harness); the file and PostgreSQL engines are run from
// package ca's tests, and a third engine is checked the same way.
package storetest
