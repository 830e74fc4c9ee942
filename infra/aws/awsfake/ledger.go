package awsfake

import (
	"fmt"
	"strings"
)

// The ledger's bookkeeping beyond the actions: who made and changed what,
// EC2's eventual consistency, injected delete failures, and CreateTags.

// lookUp checks that every instance ID is known. Each call that names an
// instance counts as a look, and a new instance is unknown for its first
// NotFoundLooks looks.
func (f *Fake) lookUp(ids []string) *apiError {
	var missing []string
	for _, id := range ids {
		r := f.instance(id)
		if r == nil {
			missing = append(missing, id)
			continue
		}
		if r.looks++; r.looks <= r.hidden {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return errf("InvalidInstanceID.NotFound", "The instance IDs '%s' do not exist", strings.Join(missing, ", "))
	}
	return nil
}

// keep puts a resource the caller being served made in the ledger.
func (f *Fake) keep(r *Resource) {
	if r.Tags == nil {
		r.Tags = map[string]string{}
	}
	r.Creator = f.caller
	f.res = append(f.res, r)
}

// touch records a change to r by the caller being served.
func (f *Fake) touch(r *Resource, action string) {
	r.Touched = append(r.Touched, action+" by "+f.caller)
}

// remove deletes r unless an injected fault, or blocked (EC2's answer
// while dependents exist), stops it.
func (f *Fake) remove(r *Resource, action string, blocked *apiError) *apiError {
	if code := f.cur.FailDelete[r.Kind]; code != "" {
		return errf(code, "You are not authorized to delete %s %s (injected).", r.Kind, r.ID)
	}
	if blocked != nil {
		return blocked
	}
	if e := f.inUseOnce(r); e != nil {
		return e
	}
	r.deleted = true
	f.touch(r, action)
	return nil
}

// createTags sets tags on instances, groups and key pairs by ID; one
// unknown ID fails the whole call, as in EC2.
func (f *Fake) createTags(form map[string][]string) (string, *apiError) {
	ids := list(form, "ResourceId")
	tags := map[string]string{}
	for i := 1; ; i++ {
		k := get(form, fmt.Sprintf("Tag.%d.Key", i))
		if k == "" {
			break
		}
		tags[k] = get(form, fmt.Sprintf("Tag.%d.Value", i))
	}
	var found []*Resource
	var insts []string
	for _, id := range ids {
		if strings.HasPrefix(id, "i-") {
			insts = append(insts, id)
			found = append(found, f.instance(id))
			continue
		}
		var r *Resource
		for _, x := range f.res {
			if x.ID == id && x.Live() {
				r = x
			}
		}
		if r == nil {
			code := map[string]string{"sg": "InvalidGroup.NotFound", "pg": "InvalidPlacementGroup.Unknown", "key": "InvalidKeyPair.NotFound"}[strings.SplitN(id, "-", 2)[0]]
			if code == "" {
				code = "InvalidID"
			}
			return "", errf(code, "The ID '%s' does not exist", id)
		}
		found = append(found, r)
	}
	if e := f.lookUp(insts); e != nil {
		return "", e
	}
	for _, r := range found {
		for k, v := range tags {
			r.Tags[k] = v
		}
		f.touch(r, "CreateTags")
	}
	return "", nil // EC2 adds <return>true</return>, which no SDK output holds
}
