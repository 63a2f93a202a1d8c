package adkfile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/agentstore/agentstore/internal/osutil"
	"github.com/agentstore/agentstore/internal/plan"
	"github.com/agentstore/agentstore/internal/shell"
	"github.com/agentstore/agentstore/pkg/artifacts"
)

// FromLegacy is the tree a migration moves from: the old-layout
// ROOT/users/ tree of a store whose current tree is ROOT/apps/ (ADK Python
// before apps/{app}/, or ADK JS).
const FromLegacy = "legacy"

// ActionMigrate is the action of a migration plan.
const ActionMigrate = "migrate"

// MaxMigrationPlanBytes bounds a migration plan read back as a
// confirmation.
const MaxMigrationPlanBytes = 64 << 20

// The steps of a migration plan: what it does with each name of the old
// tree.
const (
	// StepMoveName renames the name's versions/ directory in one step to
	// the same name in apps/{app}/users/…, which has no versions/ yet.
	StepMoveName = "move-name"
	// StepMoveVersions renames each version directory, one at a time, into
	// the versions/ of the same name in apps/{app}/users/…, which holds
	// none of these numbers.
	StepMoveVersions = "move-versions"
	// StepConflict leaves the name where it is: apps/{app}/users/… already
	// has (or reserves) a version with a number the old tree has too, and
	// a migration never overwrites or renumbers.
	StepConflict = "conflict"
	// StepHeld leaves the name where it is: its versions/ directory holds
	// something that is not a version directory (a save or delete under
	// way or interrupted, a foreign entry, a symbolic link).
	StepHeld = "held"
)

// The states of a version a plan moves.
const (
	// VersionOK is a published version (it has a metadata.json that
	// parses and a payload).
	VersionOK = "ok"
	// VersionIncomplete is a version directory without metadata.json (a
	// save ADK JS was killed in): it moves like the others, and fs repair
	// removes it from the apps/ tree past its grace period.
	VersionIncomplete = "incomplete"
	// VersionCorrupt is a version whose metadata.json does not parse or
	// whose payload is missing: it moves like the others, and fs verify
	// names it there with the command that deletes it.
	VersionCorrupt = "corrupt"
)

// MigrateOptions configure PlanMigration.
type MigrateOptions struct {
	// Store is the store's canonical URI, recorded in the plan (a plan
	// confirms only against the same store).
	Store string
	// From is the tree to migrate: FromLegacy (the only one).
	From string
	// App is the app the old tree is moved under (the app that wrote it):
	// apps/{App}/users/…. Default: the store app (Options.App).
	App string
}

// MigrationVersion is one version directory of the old tree a plan moves,
// bound to its files: Token is the version's artifacts.Record.Token (size
// and modification time of payload and metadata.json, as in delete plans)
// for a published version, and lists every entry of the directory for one
// that is incomplete or corrupt.
type MigrationVersion struct {
	Version int64  `json:"version"`
	State   string `json:"state"`
	Token   string `json:"token"`
}

// MigrationName is what a plan does with one name of the old tree.
type MigrationName struct {
	// Scope is the scope the name is in once moved (its app is the plan's
	// app).
	Scope artifacts.Scope `json:"scope"`
	// Name is the name as ADK's API gives it ("user:" kept in the user
	// scope).
	Name string `json:"name"`
	// Step is StepMoveName, StepMoveVersions, StepConflict or StepHeld.
	Step string `json:"step"`
	// From is the name's directory in the old tree, To its directory in
	// the apps/ tree, both relative to the store's root.
	From string `json:"from"`
	To   string `json:"to"`
	// Versions are the old tree's version directories of the name.
	Versions []MigrationVersion `json:"versions"`
	// Existing are the numbers the name already has (or has reserved:
	// .N.pending) in the apps/ tree.
	Existing []int64 `json:"existing,omitempty"`
	// Clash are the numbers in both trees (StepConflict).
	Clash []int64 `json:"clash,omitempty"`
	// Effect says in words what the step does with the name.
	Effect string `json:"effect"`
	// Code is the stable code of a name left where it is: conflict,
	// foreign or unsafe_store.
	Code artifacts.Code `json:"code,omitempty"`
	// NextCommand, for a conflict, shows the versions the apps/ tree holds.
	NextCommand string `json:"next_command,omitempty"`
}

// Moves reports whether the step moves anything.
func (n MigrationName) Moves() bool { return n.Step == StepMoveName || n.Step == StepMoveVersions }

// MigrationBody is a migration plan without its plan_id: its canonical
// JSON (internal/plan) is what plan_id hashes; the field order is part of
// that definition.
type MigrationBody struct {
	Action string `json:"action"`
	Store  string `json:"store"`
	From   string `json:"from"`
	App    string `json:"app"`
	// Names are the names of the old tree, ordered by From.
	Names []MigrationName `json:"names"`
	// Left are the entries of the old tree that are no name's (foreign
	// files, symbolic links, directories ADK would not make): never moved.
	Left []artifacts.Problem `json:"left"`
	// EmptyOnly is true when the old tree holds nothing but directories:
	// the plan removes them.
	EmptyOnly bool `json:"empty_only"`
}

// Migration is a migration plan as printed and as given back to confirm
// it: the body, then its plan_id, the layout and what the plan adds up to.
type Migration struct {
	MigrationBody
	PlanID string `json:"plan_id"`
	Layout string `json:"layout"`
	// NothingToDo is true when the store has no old-layout tree (any
	// more): a rerun after a complete migration.
	NothingToDo bool `json:"nothing_to_do"`
	// MoveNames and MoveVersions count what the plan moves; LeftNames
	// the names it leaves in the old tree (conflict, held).
	MoveNames    int `json:"move_names"`
	MoveVersions int `json:"move_versions"`
	LeftNames    int `json:"left_names"`
	// Notes say what the plan means for ADK's readers.
	Notes []string `json:"notes"`
}

// NeedsConfirmation reports whether executing the plan would change the
// store: it moves a name, or removes an old tree left empty.
func (m *Migration) NeedsConfirmation() bool {
	return !m.NothingToDo && (m.MoveNames > 0 || m.EmptyOnly)
}

// MigrateCommand is the command that plans the migration of the
// old-layout tree of the store at root to apps/{app}/users/.
func MigrateCommand(root, app string) string {
	return shell.Join("agentstore", "fs", "migrate", "--store", root, "--from", FromLegacy, "--app", app)
}

// PlanMigration plans, without changing anything, the move of the old
// ROOT/users/ tree of an apps/ store to ROOT/apps/{app}/users/: for each
// name, one rename of its versions/ directory when the same name has none
// in the apps/ tree, else one rename per version directory when none of
// its numbers is taken there, else nothing (a conflict). Names whose
// versions/ holds anything but version directories are held back.
// metadata.json files are moved as they are, as ADK Python's own
// migration note says (its canonicalUri keeps the old path; ADK Python
// derives the payload's place from the layout).
//
// A store without apps/ (ADK JS's tree) is CodeUnsupported: ADK JS reads
// that tree, and moving it would hide it from ADK JS. A store with no
// users/ tree gives a plan with NothingToDo. A directory or file that
// cannot be read fails the plan (CodePermission, CodeIO): nothing is
// planned around what could not be read.
func (s *Store) PlanMigration(ctx context.Context, opts MigrateOptions) (*Migration, error) {
	const op = "plan migrate"
	if opts.From != FromLegacy {
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "unknown tree %q to migrate from: the only one is %q (an apps/ store's old-layout users/ tree)", opts.From, FromLegacy)
	}
	app := opts.App
	if app == "" {
		app = s.app
	}
	if err := CheckApp(app); err != nil {
		return nil, artifacts.Errorf(artifacts.CodeInvalidArgument, op, nil, "%v", err)
	}
	if s.variant == VariantUsers {
		return nil, artifacts.Errorf(artifacts.CodeUnsupported, op, nil,
			"%s holds only the users/ tree (ADK JS's layout, or ADK Python's before apps/{app}/) and no apps/: that tree is the store, and ADK JS reads it there; moving it to apps/%s/users/ would hide every artifact from ADK JS, so fs migrate moves nothing. Migrate only a store that ADK Python already writes as apps/ (it then holds both trees)", s.rootPath, app)
	}
	m := &Migration{
		MigrationBody: MigrationBody{Action: ActionMigrate, Store: opts.Store, From: FromLegacy, App: app, Names: []MigrationName{}, Left: []artifacts.Problem{}},
		Layout:        LayoutName,
		Notes:         []string{},
	}
	ok, err := s.dirExists(op, UsersDir)
	if err != nil {
		return nil, err
	}
	if !ok {
		m.NothingToDo = true
		m.Notes = append(m.Notes, "the store has no old-layout users/ tree: nothing to migrate")
		return m.seal()
	}
	left := func(p artifacts.Problem) { m.Left = append(m.Left, p) }
	err = s.userScopes(ctx, op, app, UsersDir, func(scope artifacts.Scope, dir string) error {
		target, err := s.scopeDir(op, scope)
		if err != nil {
			return err
		}
		rels, stray, err := s.scanNames(ctx, op, dir)
		if err != nil {
			return err
		}
		m.Left = append(m.Left, stray...)
		for _, rel := range rels {
			if err := artifacts.CheckContext(ctx, op); err != nil {
				return err
			}
			n, foreignName, err := s.planName(op, scope, dir, target, rel)
			switch {
			case err != nil:
				return err
			case foreignName != nil:
				left(*foreignName)
			default:
				m.Names = append(m.Names, n)
			}
		}
		return nil
	}, left)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(m.Names, func(a, b MigrationName) int { return strings.Compare(a.From, b.From) })
	slices.SortFunc(m.Left, func(a, b artifacts.Problem) int { return strings.Compare(a.Path, b.Path) })
	m.EmptyOnly = len(m.Names) == 0 && len(m.Left) == 0
	for _, n := range m.Names {
		if n.Moves() {
			m.MoveNames++
			m.MoveVersions += len(n.Versions)
		} else {
			m.LeftNames++
		}
	}
	m.Notes = append(m.Notes,
		fmt.Sprintf("moved names are read by ADK Python as app %q; ADK JS, which reads only users/, no longer sees them", app),
		"metadata.json files move unchanged, as ADK Python's migration note prescribes: their canonicalUri keeps the old path, and ADK Python finds the payload from the layout")
	if m.LeftNames > 0 || len(m.Left) > 0 {
		m.Notes = append(m.Notes, "what the plan leaves in users/ stays there, and fs verify keeps reporting the old tree until it is empty")
	}
	if len(m.Left) > 0 {
		m.Notes = append(m.Notes, "the entries listed in left are no artifact's and are never moved: move them out of users/ by hand, then run fs migrate again to remove the emptied tree")
	}
	return m.seal()
}

// seal fills in the plan_id.
func (m *Migration) seal() (*Migration, error) {
	id, err := plan.ID(m.MigrationBody)
	if err != nil {
		return nil, err
	}
	m.PlanID = id
	return m, nil
}

// planName plans the name directory dir/rel of the old tree's scope
// (target is the scope's artifacts/ directory in the apps/ tree). A path
// that is no name ADK can save is returned as a foreign problem.
func (s *Store) planName(op string, scope artifacts.Scope, dir, target, rel string) (MigrationName, *artifacts.Problem, error) {
	name := apiName(scope.Kind, rel)
	from := path.Join(dir, rel)
	if p, err := pathName(scope, name); err != nil || p != rel || artifacts.ValidateName(name) != nil {
		f := foreign(s.abs(from), "its path is no artifact name ADK can save")
		return MigrationName{}, &f, nil
	}
	n := MigrationName{Scope: scope, Name: name, From: from, To: path.Join(target, rel), Versions: []MigrationVersion{}}
	vdir := path.Join(from, VersionsDir)
	nums, other, err := s.versionDirs(op, vdir)
	if err != nil {
		return n, nil, err
	}
	var held []string
	hold := func(code artifacts.Code, what string) {
		if n.Code == "" || code == artifacts.CodeUnsafeStore {
			n.Code = code
		}
		held = append(held, what)
	}
	for _, o := range other {
		abs := s.abs(path.Join(vdir, o.Name()))
		switch _, pending := pendingNumber(o.Name()); {
		case pending || strings.HasPrefix(o.Name(), deletingPrefix):
			hold(artifacts.CodeConflict, abs+" (a save or delete in the old tree, under way or interrupted)")
		case o.Type()&fs.ModeSymlink != 0:
			hold(artifacts.CodeUnsafeStore, abs+" (a symbolic link, never followed)")
		default:
			hold(artifacts.CodeForeign, abs+" (not a version number)")
		}
	}
	base := path.Base(rel)
	for _, v := range nums {
		e := s.readVersion(op, scope, name, path.Join(vdir, strconv.FormatInt(v, 10)), base, v)
		mv := MigrationVersion{Version: v, State: VersionOK, Token: e.rec.Token}
		switch {
		case e.state == stPublished:
		case e.state == stIncomplete || artifacts.ProblemCode(e.err) == artifacts.CodeCorrupt:
			mv.State = VersionIncomplete
			if e.state == stBroken {
				mv.State = VersionCorrupt
			}
			ref, err := s.brokenRef(op, e.dir, v)
			if err != nil {
				return n, nil, err
			}
			mv.Token = ref.Token
		case artifacts.ProblemCode(e.err) == artifacts.CodeUnsafeStore:
			hold(artifacts.CodeUnsafeStore, artifacts.ReasonOf(e.err))
		default:
			// Unreadable is not corrupt: nothing is planned around it.
			return n, nil, e.err
		}
		n.Versions = append(n.Versions, mv)
	}
	tv := path.Join(n.To, VersionsDir)
	tnums, tother, err := s.versionDirs(op, tv)
	if err != nil {
		return n, nil, err
	}
	targetHas, err := s.dirExists(op, tv)
	if err != nil {
		return n, nil, err
	}
	existing := slices.Clone(tnums)
	for _, o := range tother {
		if p, ok := pendingNumber(o.Name()); ok {
			existing = append(existing, p)
		}
	}
	slices.Sort(existing)
	existing = slices.Compact(existing)
	n.Existing = existing
	for _, v := range nums {
		if _, found := slices.BinarySearch(existing, v); found {
			n.Clash = append(n.Clash, v)
		}
	}
	switch {
	case len(held) > 0:
		n.Step = StepHeld
		n.Effect = fmt.Sprintf("left in users/, nothing of it moves: its versions/ holds %s; stop the writer or move the entry out of the store by hand, then run fs migrate again", strings.Join(held, ", "))
	case len(n.Clash) > 0:
		n.Step, n.Code = StepConflict, artifacts.CodeConflict
		n.Effect = fmt.Sprintf("left in users/, nothing of it moves: %s already has %s, which the old tree has too, and fs migrate never overwrites or renumbers; ADK Python reads only the apps/ ones. Keep one: delete the apps/ versions (artifacts delete --all-versions) and run fs migrate again, or move %s out of the store by hand",
			n.To, versionList(n.Clash), s.abs(from))
		args := []string{"agentstore", "artifacts", "versions", "--store", s.rootPath, "--app", scope.App, "--user", scope.User}
		if scope.Kind == artifacts.KindSession {
			args = append(args, "--session", scope.Session)
		}
		n.NextCommand = shell.Join(append(args, "--name", name)...)
	case !targetHas:
		n.Step = StepMoveName
		n.Effect = fmt.Sprintf("moves whole: %s (%s) in one rename of its versions/ directory", versionList(nums), plural(len(nums), "version", "versions"))
	default:
		n.Step = StepMoveVersions
		n.Effect = fmt.Sprintf("moves %s one rename each beside the %s of %s (%s)", versionList(nums), plural(len(existing), "version", "versions"), n.To, versionList(existing))
		if len(existing) == 0 || len(nums) > 0 && nums[len(nums)-1] > existing[len(existing)-1] {
			n.Effect += fmt.Sprintf("; v%d becomes the latest", nums[len(nums)-1])
		}
	}
	if len(nums) == 0 && n.Moves() {
		n.Effect = "moves its empty versions/ directory"
	}
	return n, nil, nil
}

// versionList formats version numbers: "v0 v1 v2", or "v0…v39 (40)" for a
// run of more than four.
func versionList(vs []int64) string {
	if len(vs) == 0 {
		return "no version"
	}
	if len(vs) > 4 && vs[len(vs)-1]-vs[0] == int64(len(vs)-1) {
		return fmt.Sprintf("v%d…v%d", vs[0], vs[len(vs)-1])
	}
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = "v" + strconv.FormatInt(v, 10)
	}
	return strings.Join(parts, " ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// MigrationResult is what ExecuteMigration did.
type MigrationResult struct {
	// Moved are the names moved, each with the versions it moved.
	Moved []MovedName `json:"moved"`
	// MovedVersions counts the version directories moved.
	MovedVersions int `json:"moved_versions"`
	// RemovedDirs counts the old tree's directories removed as empty.
	RemovedDirs int `json:"removed_dirs"`
	// TreeRemoved is true when users/ itself was removed: the store has no
	// old-layout tree any more.
	TreeRemoved bool `json:"tree_removed"`
}

// MovedName is one name a migration moved.
type MovedName struct {
	Scope    artifacts.Scope `json:"scope"`
	Name     string          `json:"name"`
	Step     string          `json:"step"`
	Versions []int64         `json:"versions"`
}

// migrateStepHook, when set (tests), runs before each rename of a
// migration with its number (1, 2, …); an error stops the migration
// there, as a crash would.
var migrateStepHook func(step int) error

// ExecuteMigration carries out m, a plan computed again by the caller,
// who holds the store's lock, and matched against the confirmation (see
// MigrationConfirmation.Match): each planned rename in turn, with
// RENAME_NOREPLACE, so that nothing is ever replaced. A version is in
// exactly one of the two trees at every moment, so a migration stopped
// midway (killed, or failing) leaves every version readable where it is,
// and planning again plans the rest. A target that appeared since the plan
// stops the migration with CodeConflict. When every rename is done, the
// old tree's empty directories are removed, users/ too when it is left
// empty. The result lists what was moved also when an error stopped it.
func (s *Store) ExecuteMigration(ctx context.Context, m *Migration) (MigrationResult, error) {
	const op = "migrate"
	res := MigrationResult{Moved: []MovedName{}}
	if m.NothingToDo {
		return res, nil
	}
	// Each directory a rename touched is synced once, at the end: a rename
	// is atomic whether or not it reached the disk, so a power cut undoes
	// some moves at worst, and every version is still in exactly one tree.
	synced := map[string]bool{}
	defer func() {
		for dir := range synced {
			_ = osutil.SyncDir(s.abs(dir))
		}
	}()
	step := 0
	move := func(oldDir, oldName, newDir, newName string) error {
		if err := artifacts.CheckContext(ctx, op); err != nil {
			return err
		}
		step++
		if migrateStepHook != nil {
			if err := migrateStepHook(step); err != nil {
				return err
			}
		}
		err := s.moveNoReplace(oldDir, oldName, newDir, newName)
		switch {
		case errors.Is(err, fs.ErrExist):
			return artifacts.Errorf(artifacts.CodeConflict, op, nil, "%s appeared since the plan was made; it was not replaced, and the migration stopped there: run fs migrate again to plan the rest", s.abs(path.Join(newDir, newName)))
		case err != nil:
			return fsErr(op, s.abs(path.Join(oldDir, oldName)), err)
		}
		synced[newDir], synced[oldDir] = true, true
		return nil
	}
	for _, n := range m.Names {
		if !n.Moves() {
			continue
		}
		done := MovedName{Scope: n.Scope, Name: n.Name, Step: n.Step, Versions: []int64{}}
		var err error
		if n.Step == StepMoveName {
			if err = s.mkdirAll(op, n.To); err == nil {
				err = move(n.From, VersionsDir, n.To, VersionsDir)
			}
			if err == nil {
				for _, v := range n.Versions {
					done.Versions = append(done.Versions, v.Version)
				}
			}
		} else {
			for _, v := range n.Versions {
				num := strconv.FormatInt(v.Version, 10)
				if err = move(path.Join(n.From, VersionsDir), num, path.Join(n.To, VersionsDir), num); err != nil {
					break
				}
				done.Versions = append(done.Versions, v.Version)
			}
		}
		if len(done.Versions) > 0 || err == nil {
			res.Moved = append(res.Moved, done)
			res.MovedVersions += len(done.Versions)
		}
		if err != nil {
			return res, err
		}
	}
	removed, gone, err := s.removeEmptyDirs(ctx, op, UsersDir)
	res.RemovedDirs, res.TreeRemoved = removed, gone
	if gone {
		_ = osutil.SyncDir(s.rootPath)
		s.legacy = false
	}
	return res, err
}

// removeEmptyDirs removes, bottom up, the directories below rel (and rel)
// that hold nothing but directories removed this way. It never follows a
// symbolic link, removes a directory only when it is empty (rmdir), and
// never descends into a versions/ directory: an empty version directory
// or a .N.pending reservation of a name left in place stays.
func (s *Store) removeEmptyDirs(ctx context.Context, op, rel string) (removed int, gone bool, err error) {
	if err := artifacts.CheckContext(ctx, op); err != nil {
		return 0, false, err
	}
	if path.Base(rel) == VersionsDir {
		return s.removeIfEmpty(op, rel)
	}
	entries, err := s.readDir(op, rel)
	if err != nil {
		return 0, false, err
	}
	empty := true
	for _, e := range entries {
		if !e.IsDir() || e.Type()&fs.ModeSymlink != 0 {
			empty = false
			continue
		}
		n, g, err := s.removeEmptyDirs(ctx, op, path.Join(rel, e.Name()))
		removed += n
		if err != nil {
			return removed, false, err
		}
		empty = empty && g
	}
	if !empty {
		return removed, false, nil
	}
	n, gone, err := s.removeIfEmpty(op, rel)
	return removed + n, gone, err
}

// removeIfEmpty removes the directory rel when it is empty (rmdir).
func (s *Store) removeIfEmpty(op, rel string) (removed int, gone bool, err error) {
	if err := s.root.Remove(rel); err != nil {
		if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) || errors.Is(err, fs.ErrNotExist) {
			return 0, false, nil // not empty, filled meanwhile, or gone
		}
		return 0, false, fsErr(op, s.abs(rel), err)
	}
	return 1, true, nil
}

// MigrationConfirmation is a parsed confirmation of a migration plan: a
// plan_id alone, or the whole plan.
type MigrationConfirmation struct {
	PlanID string
	Plan   *Migration
}

// ParseMigrationConfirmation parses a plan_id or a whole migration plan
// (the one plan/confirm mechanism of internal/plan); anything else is a
// *plan.ParseError.
func ParseMigrationConfirmation(s string) (MigrationConfirmation, error) {
	return migrationConfirmation(plan.Parse[Migration](s, "migration plan"))
}

// ReadMigrationConfirmation reads a confirmation from r (a file, standard
// input) and parses it as ParseMigrationConfirmation does.
func ReadMigrationConfirmation(r io.Reader) (MigrationConfirmation, error) {
	return migrationConfirmation(plan.Read[Migration](r, MaxMigrationPlanBytes, "migration plan"))
}

func migrationConfirmation(p *Migration, id string, err error) (MigrationConfirmation, error) {
	if err != nil {
		return MigrationConfirmation{}, err
	}
	if p != nil {
		return MigrationConfirmation{PlanID: p.PlanID, Plan: p}, nil
	}
	return MigrationConfirmation{PlanID: id}, nil
}

// Match decides whether the confirmation allows executing cur, the plan
// computed again just now: nil when it does, else a
// *plan.ConfirmationError: a plan modified after it was made or made for
// another store, tree or app (confirmation_required), or one that differs
// from cur because the tree changed (stale_confirmation). Nothing was
// moved.
func (c MigrationConfirmation) Match(cur *Migration) error {
	if c.Plan == nil {
		if c.PlanID == cur.PlanID {
			return nil
		}
		return &plan.ConfirmationError{Stale: true, Msg: fmt.Sprintf(
			"stale confirmation: plan_id %s does not match the current plan %s (the trees changed since the plan was made, or the id is for another plan); nothing was moved", c.PlanID, cur.PlanID)}
	}
	p := c.Plan
	id, err := plan.ID(p.MigrationBody)
	if err != nil {
		return err
	}
	if id != p.PlanID {
		return &plan.ConfirmationError{Msg: fmt.Sprintf(
			"refused: the confirmed plan was modified after it was made (its plan_id %q does not match its content, which hashes to %s); make a new plan; nothing was moved", p.PlanID, id)}
	}
	if p.Action != cur.Action || p.Store != cur.Store || p.From != cur.From || p.App != cur.App {
		return &plan.ConfirmationError{Msg: fmt.Sprintf(
			"refused: the confirmed plan is for %s --from %s --app %s of %s, not for this command (%s --from %s --app %s of %s); nothing was moved",
			p.Action, p.From, p.App, p.Store, cur.Action, cur.From, cur.App, cur.Store)}
	}
	if p.PlanID != cur.PlanID {
		return &plan.ConfirmationError{Stale: true, Msg: "stale confirmation: the trees changed since the plan was made (" + diffMigrations(p.Names, cur.Names) + "); nothing was moved"}
	}
	return nil
}

// diffMigrations names the names whose plan changed.
func diffMigrations(old, cur []MigrationName) string {
	key := func(n MigrationName) string { return n.From }
	index := func(ns []MigrationName) map[string]MigrationName {
		m := make(map[string]MigrationName, len(ns))
		for _, n := range ns {
			m[key(n)] = n
		}
		return m
	}
	o, c := index(old), index(cur)
	var changed []string
	for k, n := range o {
		if x, ok := c[k]; !ok || x.Step != n.Step || !slices.Equal(x.Versions, n.Versions) || !slices.Equal(x.Existing, n.Existing) {
			changed = append(changed, strconv.Quote(n.Name)+" in "+n.Scope.String())
		}
	}
	for k, n := range c {
		if _, ok := o[k]; !ok {
			changed = append(changed, strconv.Quote(n.Name)+" in "+n.Scope.String()+" (new)")
		}
	}
	slices.SortFunc(changed, cmp.Compare)
	if len(changed) == 0 {
		return "entries that are no name's changed"
	}
	if len(changed) > 5 {
		changed = append(changed[:5], fmt.Sprintf("and %d more", len(changed)-5))
	}
	return "changed: " + strings.Join(changed, ", ")
}
