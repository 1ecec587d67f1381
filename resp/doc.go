// Package resp is the Redis protocol, without the server: the bounded
// request reader (RESP multibulk and inline requests, with every size
// checked before memory is committed), the reply writer (RESP2 and RESP3
// forms of each reply type), reply framing (ReplyScanner: where a reply
// ends, for relaying another server's replies unchanged), inline argument
// splitting, and the integer grammar of request headers.
//
// Nothing here knows about commands, the keyspace or connections; a
// Reader, a Writer and a ReplyScanner each belong to one connection and
// are not safe for concurrent use.
package resp
