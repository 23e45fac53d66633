// libforge.so: every module linked whole into one shared library; this file only anchors it.
namespace forge {
const char* LibraryName() { return "forge"; }
}  // namespace forge
