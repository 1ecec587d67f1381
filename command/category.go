package command

import "strings"

// Category is a set of ACL command categories (@read, @write, ...), one
// bit each, in Redis's order: the order ACL CAT and COMMAND list them and
// the order ACL GETUSER tries them when it describes a user's commands.
type Category uint32

// The ACL categories, in Redis's order.
const (
	CatKeyspace Category = 1 << iota
	CatRead
	CatWrite
	CatSet
	CatSortedSet
	CatList
	CatHash
	CatString
	CatBitmap
	CatHyperLogLog
	CatGeo
	CatStream
	CatPubSub
	CatAdmin
	CatFast
	CatSlow
	CatBlocking
	CatDangerous
	CatConnection
	CatTransaction
	CatScripting
	numCategories = iota
)

// categoryNames are the categories' names, indexed by bit number.
var categoryNames = [numCategories]string{"keyspace", "read", "write", "set", "sortedset",
	"list", "hash", "string", "bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin",
	"fast", "slow", "blocking", "dangerous", "connection", "transaction", "scripting"}

// groupCategories is the data-type or family category a documentation
// group implies, as Redis assigns them to its commands.
var groupCategories = map[string]Category{
	"string": CatString, "set": CatSet, "hash": CatHash, "sorted-set": CatSortedSet,
	"list": CatList, "stream": CatStream, "generic": CatKeyspace, "connection": CatConnection,
	"transactions": CatTransaction, "pubsub": CatPubSub, "scripting": CatScripting,
	"bitmap": CatBitmap, "hyperloglog": CatHyperLogLog, "geo": CatGeo,
}

// CategoryNames returns every category name in Redis's order.
func CategoryNames() []string { return categoryNames[:] }

// CategoryByName finds a category by name, case-insensitively (0 if
// there is none).
func CategoryByName(name string) Category {
	for i, n := range categoryNames {
		if strings.EqualFold(n, name) {
			return 1 << i
		}
	}
	return 0
}

// Names lists the categories of c in Redis's order, without '@'.
func (c Category) Names() []string {
	var out []string
	for i, n := range categoryNames {
		if c&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// implicitCategories derives the categories Redis derives from a row's
// flags and group (a container's group gives it none); Cats adds to them
// and NotCats takes away.
func implicitCategories[H any](c *Command[H]) Category {
	group := c.Group
	if c.parent != nil {
		group = c.parent.Group
	}
	cats := c.Cats
	if len(c.Subs) == 0 { // Redis gives containers no family category
		cats |= groupCategories[group]
	}
	if c.Has(Write) {
		cats |= CatWrite
	}
	if c.Has(Readonly) && cats&CatScripting == 0 {
		cats |= CatRead
	}
	if c.Has(Admin) {
		cats |= CatAdmin | CatDangerous
	}
	if c.Has(Fast) {
		cats |= CatFast
	}
	if c.Has(Blocking) {
		cats |= CatBlocking
	}
	cats &^= c.NotCats
	if cats&CatFast == 0 {
		cats |= CatSlow
	}
	return cats
}
