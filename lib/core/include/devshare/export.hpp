// devshare/export.hpp — the one symbol-visibility macro of the library.
//
// The library is built with hidden visibility; every public function and class
// carries DEVSHARE_EXPORT so that it, and only it, is visible to embedders.
#ifndef DEVSHARE_EXPORT_HPP_
#define DEVSHARE_EXPORT_HPP_

#if defined(DEVSHARE_BUILDING_LIBRARY)
#define DEVSHARE_EXPORT [[gnu::visibility("default")]]
#else
#define DEVSHARE_EXPORT
#endif

#endif  // DEVSHARE_EXPORT_HPP_
