// Package slogevents logs the bulkhead events that need attention —
// rejections and cancellations — with log/slog. [Logger.Log] is an event
// listener for bulkhead.Semaphore.OnEvent or bulkhead.Registry.OnEvent.
package slogevents
