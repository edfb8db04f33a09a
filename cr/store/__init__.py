"""Components, repositories, the search index and component references."""
